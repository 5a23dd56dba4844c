package ratelimit

import (
	"fmt"
	"net/netip"
	"net/textproto"
	"slices"
	"strings"

	"github.com/a7d3e0dd/ratelimit/internal/forwarded"
	"github.com/a7d3e0dd/ratelimit/internal/prefixset"
)

// ipResolver finds a request's client IP address. By default it is the address of the
// connection's peer, and headers are ignored: X-Forwarded-For, X-Real-IP and Forwarded are
// written by whoever sends the request, so trusting them by default would let every client pick
// its own identity. With trusted proxies ([TrustProxies]), when the peer is one of them, the
// resolver reads the header the proxies write from the right, skipping the addresses of trusted
// proxies: the first address that is not trusted is the client. Everything to its left was
// written by the client or its own proxies and is never read. When every address is trusted
// the request came from inside, and the leftmost address is the client. When a trusted proxy's
// request names no client in the header, the proxy is the client (see [TrustProxies]).
//
// Addresses are normalised: IPv4-mapped IPv6 addresses become IPv4, zones and ports are
// dropped; IPv6 clients are grouped by prefix ([IPv6Prefix]).
type ipResolver struct {
	trusted   []netip.Prefix
	unix      bool   // a peer that is not an IP address (a Unix socket) is a trusted proxy
	header    string // canonical name of the header the trusted proxies write
	forwarded bool   // header is Forwarded (RFC 7239)
	v6bits    int
	guard     *Guard // told of a trusted proxy's requests that name no client; nil: none
}

// ipConfig is what the client-IP options set.
type ipConfig struct {
	trusted   []netip.Prefix
	unix      bool
	header    string
	headerSet bool
	v6bits    int
}

// resolver returns the resolver of c: peerOnly itself when c trusts no proxy and groups IPv6
// clients as peerOnly does, so that a guard can tell it gives the same answers.
func (c ipConfig) resolver() *ipResolver {
	if len(c.trusted) == 0 && !c.unix && c.v6bits == peerOnly.v6bits {
		return peerOnly
	}
	header := c.header
	if header == "" {
		header = "X-Forwarded-For"
	}
	return &ipResolver{trusted: c.trusted, unix: c.unix, header: header, forwarded: header == "Forwarded", v6bits: c.v6bits}
}

// peerOnly is the resolver of a key function called outside a guard: the connection's peer,
// IPv6 clients grouped by /64. It is also the resolver of every guard configured so.
var peerOnly = &ipResolver{header: "X-Forwarded-For", v6bits: 64}

// passed is res as an outcome hands it to a guard inside (see Guard.ipOf): nil for the peer's,
// which every guard has.
func (res *ipResolver) passed() *ipResolver {
	if res == peerOnly {
		return nil
	}
	return res
}

// reportTo makes res, the resolver of guard g, tell g of the requests from a trusted proxy that
// name no client (see [Guard.proxySentNoClient]). peerOnly trusts no proxy, and is shared.
func (res *ipResolver) reportTo(g *Guard) {
	if res != peerOnly {
		res.guard = g
	}
}

// TrustProxies names the reverse proxies in front of the service and the header they write the
// client's address into. It sets every use of the client IP by the guard:
// [KeyByIP], and the client IP that limits a request whose key function finds no key. A guard
// given no client-IP option (neither TrustProxies nor IPv6Prefix) that a request reaches
// through one given them — a route's own guard inside the middleware around every route —
// reads the client IP as that one does: the route's limit is per client, not the load
// balancer's for everyone.
//
//	ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8", "2001:db8::/32")
//
// header is "X-Forwarded-For", "Forwarded" (RFC 7239, read from its for= parameters), or a
// single-address header such as "X-Real-IP" or "CF-Connecting-IP"; any header but Forwarded is
// read as a comma-separated list of addresses. Only this header is read, and only from a
// request whose connection comes from a proxy: a client's spoofed copy of any header is
// ignored. proxies are CIDR prefixes ("10.0.0.0/8") or single addresses ("192.0.2.10"); give
// every proxy of the chain (load balancer, ingress, sidecar), and nothing a client can reach
// directly. "unix" trusts a peer on a Unix socket (nginx with proxy_pass to
// unix:/run/app.sock): a request on the socket without the header has no client IP (a 400),
// never the socket's quota.
//
// A request from a trusted proxy over TCP that names no client in the header (the header is
// absent or has no address) is limited by the proxy's own address: that is right for the
// proxy's own requests, such as a load balancer's health checks, which are not refused; but
// if the proxy forwards clients without the header (it writes another one), they all share
// the proxy's quota. The guard counts each such request with the [Observer] (KeyFellBack,
// reason "no_proxy_header") and logs a warning once, and once more, naming the header, for a
// proxy that sent another forwarding header instead.
//
// Given twice for the same header (a load balancer's addresses, then an ingress's), the guard
// trusts the proxies of both. Given for two headers, it is refused: the guard reads one header,
// and which one would decide, unseen, whose clients share a quota.
func TrustProxies(header string, proxies ...string) Option {
	return func(gc *guardConfig) {
		if !validHeaderName(header) {
			gc.errorf("TrustProxies: %q is not a valid header name; the first argument names the header the proxies write", header)
			return
		}
		header = textproto.CanonicalMIMEHeaderKey(header)
		if gc.ip.headerSet && gc.ip.header != header {
			gc.errorf("TrustProxies given for %s and for %s: a guard reads the client's address from one header; "+
				"give every proxy in front of it under the header they all write", gc.ip.header, header)
			return
		}
		ip := gc.ip // given before for the same header: its proxies are trusted too
		ip.header, ip.headerSet = header, true
		ip.trusted = slices.Clip(ip.trusted)
		for _, s := range proxies {
			if s == "unix" {
				ip.unix = true
				continue
			}
			p, err := prefixset.Parse(s)
			if err != nil {
				gc.errorf("TrustProxies: %q is neither a CIDR prefix nor an IP address", s)
				return
			}
			if !slices.Contains(ip.trusted, p) {
				ip.trusted = append(ip.trusted, p)
			}
		}
		gc.ip = ip
	}
}

// IPv6Prefix sets how many leading bits of an IPv6 client address form its key (default 64).
// One subscriber usually holds a whole /64, so keying by full address would give a client 2^64
// quotas; 128 keys by the full address.
func IPv6Prefix(bits int) Option {
	return func(gc *guardConfig) {
		if !gc.once("IPv6Prefix", "") {
			return
		}
		if bits < 1 || bits > 128 {
			gc.errorf("IPv6Prefix(%d): bits must be between 1 and 128", bits)
			return
		}
		gc.ip.v6bits = bits
	}
}

// KeyByIP keys requests by client IP address, as "ip:192.0.2.1" or, for IPv6, by prefix,
// "ip:2001:db8:1:2::/64". The client is the connection's peer unless the guard trusts proxies
// ([TrustProxies]); IPv6 clients are grouped by [IPv6Prefix]. It is the guard's default key.
func KeyByIP() KeyFunc { return keyByIP }

func keyByIP(r Request) (string, error) {
	res := peerOnly
	if g, ok := r.(*guardRequest); ok {
		res = g.ip
	}
	return res.key(r)
}

// key returns "ip:" and the client address, or for IPv6 its prefix.
func (res *ipResolver) key(r Request) (string, error) {
	a, err := res.clientIP(r)
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

// clientIP returns the client address of r, normalised (IPv4-mapped addresses unmapped, no
// zone). It fails when the peer address is not an IP address (a Unix socket) and Unix sockets
// are not trusted, or when a trusted proxy's header is malformed where it must be read.
func (res *ipResolver) clientIP(r Request) (netip.Addr, error) {
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
func (res *ipResolver) walk(r Request, client netip.Addr) (netip.Addr, error) {
	if !res.isTrusted(client) {
		return client, nil
	}
	v := r.Header(res.header)
	if v == "" {
		return res.noClient(r, client), nil
	}
	if len(v) > maxKeyBytes {
		return netip.Addr{}, fmt.Errorf("%w: header %s is %d bytes, more than %d", ErrBadRequest, res.header, len(v), maxKeyBytes)
	}
	if res.forwarded {
		return res.fromForwarded(r, client, v)
	}
	// X-Forwarded-For and the like: walk the list from the right while the hop is trusted.
	named := false // an address was read from the header
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
		client, named = a, true
	}
	if !named { // every element was empty
		return res.noClient(r, client), nil
	}
	return client, nil
}

// noClient returns the client of r, whose peer, a trusted proxy, named none in the header:
// the peer, which a guard is told of. The peer of a Unix socket has no address, and r none
// (clientIP refuses it).
func (res *ipResolver) noClient(r Request, peer netip.Addr) netip.Addr {
	if peer.IsValid() && res.guard != nil {
		res.guard.proxySentNoClient(r, peer, res.header)
	}
	return peer
}

// fromForwarded walks the for= parameters of a Forwarded header from the right.
func (res *ipResolver) fromForwarded(r Request, client netip.Addr, v string) (netip.Addr, error) {
	elems, err := forwarded.Parse(v)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("ratelimit: client IP: %w", err)
	}
	if len(elems) == 0 { // only empty elements
		return res.noClient(r, client), nil
	}
	for i := len(elems) - 1; i >= 0 && res.isTrusted(client); i-- {
		node := elems[i].For
		if node == "" {
			return netip.Addr{}, fmt.Errorf("ratelimit: client IP: a Forwarded element has no for= parameter")
		}
		a, err := forwarded.ParseNode(node)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("ratelimit: client IP: Forwarded %w", err)
		}
		client = a
	}
	return client, nil
}

func (res *ipResolver) isTrusted(a netip.Addr) bool {
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
