package ratelimit

import (
	"errors"
	"fmt"
	"net/netip"
	"net/textproto"
	"strings"
)

// IPResolver finds a request's client IP address. By default it is the address of the
// connection's peer, and headers are ignored: X-Forwarded-For, X-Real-IP and Forwarded are
// written by whoever sends the request, so trusting them by default would let every client
// pick its own identity.
//
// Behind reverse proxies, name them with [TrustProxies]. When the peer is a trusted proxy, the
// resolver reads the header the proxies write ([ProxyHeader], X-Forwarded-For by default) from
// the right, skipping the addresses of trusted proxies: the first address that is not trusted
// is the client. Everything to its left was written by the client or its own proxies and is
// never read. When every address is trusted the request came from inside, and the leftmost
// address is the client.
//
// Addresses are normalised: IPv4-mapped IPv6 addresses become IPv4, zones and ports are
// dropped. [IPResolver.Key] groups IPv6 clients by prefix (see [IPv6Prefix]).
//
// An IPResolver is safe for concurrent use.
type IPResolver struct {
	trusted   []netip.Prefix
	unix      bool   // a peer that is not an IP address (a Unix socket) is a trusted proxy
	header    string // canonical name of the header the trusted proxies write
	forwarded bool   // header is Forwarded (RFC 7239)
	v6bits    int
}

// IPOption configures an [IPResolver] or [KeyByIP].
type IPOption func(*ipConfig)

type ipConfig struct {
	trusted   []netip.Prefix
	unix      bool
	header    string
	headerSet bool
	v6bits    int
	errs      []error
}

// TrustProxies names the reverse proxies in front of the service, as CIDR prefixes
// ("10.0.0.0/8", "2001:db8::/32") or single addresses ("192.0.2.10"). Only a request whose
// connection comes from one of them has its proxy header read. Give every proxy of the chain
// (load balancer, ingress, sidecar), and nothing a client can reach directly.
//
// The proxies are those of one key function only. A [Guard] limits a request whose key
// function finds no key ([ErrNoKey]) by its fallback key, by default KeyByIP() without
// options: the proxy's address, shared by every client. Give the fallback the proxies too,
// with [WithFallbackKey](KeyByIP(TrustProxies(...))), or refuse such requests with
// [RejectMissingKey].
func TrustProxies(cidrs ...string) IPOption {
	return func(c *ipConfig) {
		for _, s := range cidrs {
			p, err := parsePrefix(s)
			if err != nil {
				c.errs = append(c.errs, fmt.Errorf("TrustProxies: %q is neither a CIDR prefix nor an IP address", s))
				continue
			}
			c.trusted = append(c.trusted, p)
		}
	}
}

// TrustUnixSocket trusts a peer that has no IP address — a reverse proxy on a Unix socket,
// such as nginx with proxy_pass to unix:/run/app.sock — as a proxy: the client is read from its
// proxy header. A request on the socket without the header, or whose header yields no
// address, has no client IP (an error, answered 400), never the socket's quota.
func TrustUnixSocket() IPOption {
	return func(c *ipConfig) { c.unix = true }
}

func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		if p.Addr().Is4In6() {
			if p.Bits() < 96 {
				return netip.Prefix{}, errors.New("IPv4-mapped prefix shorter than /96")
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ProxyHeader names the header the trusted proxies write the client address into:
// "X-Forwarded-For" (the default), "Forwarded" (RFC 7239, read from its for= parameters), or
// a single-address header such as "X-Real-IP" or "CF-Connecting-IP". Any header other than
// Forwarded is read as a comma-separated list of addresses. Only this header is read: a
// client's spoofed copy of another is ignored. ProxyHeader needs [TrustProxies].
func ProxyHeader(name string) IPOption {
	return func(c *ipConfig) {
		if !validHeaderName(name) {
			c.errs = append(c.errs, fmt.Errorf("ProxyHeader: %q is not a valid header name", name))
			return
		}
		c.header, c.headerSet = textproto.CanonicalMIMEHeaderKey(name), true
	}
}

// IPv6Prefix sets how many leading bits of an IPv6 client address form its key (default 64).
// One subscriber usually holds a whole /64, so keying by full address would give a client
// 2^64 quotas. 128 keys by the full address.
func IPv6Prefix(bits int) IPOption {
	return func(c *ipConfig) {
		if bits < 1 || bits > 128 {
			c.errs = append(c.errs, fmt.Errorf("IPv6Prefix(%d): bits must be between 1 and 128", bits))
			return
		}
		c.v6bits = bits
	}
}

// NewIPResolver returns a resolver configured by opts, or an error naming the bad option.
func NewIPResolver(opts ...IPOption) (*IPResolver, error) {
	c := ipConfig{header: "X-Forwarded-For", v6bits: 64}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("ratelimit: NewIPResolver: an IPOption is nil")
		}
		o(&c)
	}
	if c.headerSet && len(c.trusted) == 0 && !c.unix && len(c.errs) == 0 {
		c.errs = append(c.errs, fmt.Errorf("ProxyHeader(%q) has no effect without TrustProxies or TrustUnixSocket", c.header))
	}
	if err := errors.Join(c.errs...); err != nil {
		return nil, fmt.Errorf("ratelimit: client IP: %w", err)
	}
	return &IPResolver{trusted: c.trusted, unix: c.unix, header: c.header, forwarded: c.header == "Forwarded", v6bits: c.v6bits}, nil
}

// KeyByIP keys requests by client IP address, as "ip:192.0.2.1" or, for IPv6, by prefix,
// "ip:2001:db8:1:2::/64". Without options the address is the connection's peer; behind
// reverse proxies, name them with [TrustProxies]. See [IPResolver] for the rules.
//
// Behind reverse proxies, name them wherever KeyByIP is used, including the [Guard]'s
// fallback key, which limits requests whose key function finds no key ([ErrNoKey]) and is
// KeyByIP() without options unless [WithFallbackKey] says otherwise:
//
//	ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(ratelimit.TrustProxies("10.0.0.0/8")), ratelimit.KeyByRoute())),
//	ratelimit.WithFallbackKey(ratelimit.KeyByIP(ratelimit.TrustProxies("10.0.0.0/8"))),
//
// KeyByIP panics if an option is invalid; [NewIPResolver] returns the error instead.
func KeyByIP(opts ...IPOption) KeyFunc {
	r, err := NewIPResolver(opts...)
	if err != nil {
		panic(err)
	}
	return r.Key
}

// Key is a [KeyFunc]: it returns "ip:" and the client address, or for IPv6 its prefix.
func (res *IPResolver) Key(r Request) (string, error) {
	a, err := res.ClientIP(r)
	if err != nil {
		return "", err
	}
	var buf [64]byte
	b := append(buf[:0], "ip:"...)
	if a.Is6() && res.v6bits < 128 {
		b = netip.PrefixFrom(a, res.v6bits).Masked().AppendTo(b)
	} else {
		b = a.AppendTo(b)
	}
	return string(b), nil
}

// ClientIP returns the client address of r, normalised (IPv4-mapped addresses unmapped, no
// zone). It fails when the peer address is not an IP address (a Unix socket) unless
// [TrustUnixSocket] is given, or when a trusted proxy's header is malformed where it must be
// read.
func (res *IPResolver) ClientIP(r Request) (netip.Addr, error) {
	remote := r.RemoteAddr()
	client, ok := parseHostPort(remote)
	if !ok && !res.unix {
		return netip.Addr{}, fmt.Errorf("ratelimit: client IP: the connection's address %q is not an IP address", clip(remote))
	}
	// Unless it is an IP address, the peer stays the zero Addr, which isTrusted trusts.
	a, err := res.walk(r, client)
	if err == nil && !a.IsValid() {
		err = fmt.Errorf("ratelimit: client IP: the Unix socket's peer sent no client address in %s", res.header)
	}
	return a, err
}

// walk returns the client behind the trusted proxies, starting from the peer.
func (res *IPResolver) walk(r Request, client netip.Addr) (netip.Addr, error) {
	if !res.isTrusted(client) {
		return client, nil
	}
	v := r.Header(res.header)
	if v == "" {
		return client, nil
	}
	if len(v) > MaxKeyBytes {
		return netip.Addr{}, fmt.Errorf("%w: header %s is %d bytes, more than %d", ErrKeyTooLong, res.header, len(v), MaxKeyBytes)
	}
	if res.forwarded {
		return res.fromForwarded(client, v)
	}
	// X-Forwarded-For and the like: walk the list from the right while the hop is trusted.
	for rest := v; res.isTrusted(client) && rest != ""; {
		var elem string
		if i := strings.LastIndexByte(rest, ','); i >= 0 {
			rest, elem = rest[:i], rest[i+1:]
		} else {
			rest, elem = "", rest
		}
		elem = strings.Trim(elem, " \t")
		if elem == "" {
			continue // empty list elements are allowed (RFC 9110 §5.6.1)
		}
		a, ok := parseHostPort(elem)
		if !ok {
			return netip.Addr{}, fmt.Errorf("ratelimit: client IP: %s entry %q is not an IP address", res.header, clip(elem))
		}
		client = a
	}
	return client, nil
}

// fromForwarded walks the for= parameters of a Forwarded header from the right.
func (res *IPResolver) fromForwarded(client netip.Addr, v string) (netip.Addr, error) {
	elems, err := parseForwarded(v)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("ratelimit: client IP: %w", err)
	}
	for i := len(elems) - 1; i >= 0 && res.isTrusted(client); i-- {
		node := elems[i].For
		if node == "" {
			return netip.Addr{}, fmt.Errorf("ratelimit: client IP: a Forwarded element has no for= parameter")
		}
		a, err := parseForwardedNode(node)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("ratelimit: client IP: Forwarded %w", err)
		}
		client = a
	}
	return client, nil
}

func (res *IPResolver) isTrusted(a netip.Addr) bool {
	if !a.IsValid() {
		return res.unix // the peer of a Unix socket
	}
	for _, p := range res.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseHostPort parses "ip", "ip:port", "[ipv6]" or "[ipv6]:port", with an optional zone,
// and returns the address unmapped and without its zone.
func parseHostPort(s string) (netip.Addr, bool) {
	var a netip.Addr
	if ap, err := netip.ParseAddrPort(s); err == nil {
		a = ap.Addr()
	} else if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err = netip.ParseAddr(s[1 : len(s)-1]); err != nil || !a.Is6() {
			return netip.Addr{}, false
		}
	} else if a, err = netip.ParseAddr(s); err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
