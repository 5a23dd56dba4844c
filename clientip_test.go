package ratelimit_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// ipReq is a request from remote with the given header lines.
func ipReq(remote string, header ...string) ratelimit.Request {
	r := &http.Request{RemoteAddr: remote, Header: http.Header{}}
	for i := 0; i < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return ratelimit.HTTPRequest(r)
}

var (
	trustLAN = ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8", "2001:db8:ffff::/48")
	spoofs   = []string{"X-Forwarded-For", "203.0.113.66", "X-Real-IP", "203.0.113.67", "Forwarded", "for=203.0.113.68"}
)

func TestClientIP(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   []ratelimit.Option
		req    ratelimit.Request
		want   string // the address, or a part of the error
		errors bool
	}{
		// The connection's address, normalised.
		{name: "ipv4", req: ipReq("192.0.2.1:1234"), want: "192.0.2.1"},
		{name: "ipv6", req: ipReq("[2001:db8::1]:443"), want: "2001:db8::1"},
		{name: "ipv4-mapped ipv6", req: ipReq("[::ffff:192.0.2.1]:80"), want: "192.0.2.1"},
		{name: "zone", req: ipReq("[fe80::1%eth0]:80"), want: "fe80::1"},
		{name: "no port", req: ipReq("192.0.2.1"), want: "192.0.2.1"},
		{name: "ipv6 without port", req: ipReq("2001:db8::1"), want: "2001:db8::1"},
		{name: "ipv6 in brackets without port", req: ipReq("[2001:db8::1]"), want: "2001:db8::1"},
		{name: "unix socket", req: ipReq("@"), want: `the connection's address "@" is not an IP address`, errors: true},
		{name: "empty", req: ipReq(""), want: "is not an IP address", errors: true},
		{name: "host name", req: ipReq("example.com:80"), want: "is not an IP address", errors: true},
		{name: "ipv4 in brackets", req: ipReq("[192.0.2.1]"), want: "is not an IP address", errors: true},

		// A reverse proxy on a Unix socket, trusted as "unix".
		{name: "unix socket, trusted", opts: []ratelimit.Option{ratelimit.TrustProxies("X-Forwarded-For", "unix")},
			req: ipReq("@", "X-Forwarded-For", "198.51.100.1, 203.0.113.7"), want: "203.0.113.7"},
		{name: "unix socket, trusted, then trusted proxies", opts: []ratelimit.Option{ratelimit.TrustProxies("X-Forwarded-For", "unix", "10.0.0.0/8", "2001:db8:ffff::/48")},
			req: ipReq("", "X-Forwarded-For", "203.0.113.7, 10.0.0.2"), want: "203.0.113.7"},
		{name: "unix socket, trusted, Forwarded", opts: []ratelimit.Option{ratelimit.TrustProxies("Forwarded", "unix")},
			req: ipReq("@", "Forwarded", `for="[2001:db8::7]:4711"`), want: "2001:db8::7"},
		{name: "unix socket, trusted, no header", opts: []ratelimit.Option{ratelimit.TrustProxies("X-Forwarded-For", "unix")},
			req: ipReq("@"), want: "the Unix socket's peer sent no client address", errors: true},
		{name: "unix socket, trusted, empty list", opts: []ratelimit.Option{ratelimit.TrustProxies("X-Forwarded-For", "unix")},
			req: ipReq("@", "X-Forwarded-For", " , "), want: "the Unix socket's peer sent no client address", errors: true},
		{name: "a trusted Unix socket trusts no IP peer", opts: []ratelimit.Option{ratelimit.TrustProxies("X-Forwarded-For", "unix")},
			req: ipReq("192.0.2.1:1", spoofs...), want: "192.0.2.1"},

		// Spoofed headers change nothing without trusted proxies.
		{name: "spoofed headers", req: ipReq("192.0.2.1:1234", spoofs...), want: "192.0.2.1"},
		{name: "spoofed headers from a private address", req: ipReq("10.0.0.1:1234", spoofs...), want: "10.0.0.1"},
		// ...nor when the peer is not a trusted proxy.
		{name: "spoofed headers, untrusted peer", opts: []ratelimit.Option{trustLAN}, req: ipReq("192.0.2.1:1", spoofs...), want: "192.0.2.1"},

		// X-Forwarded-For from a trusted proxy: the rightmost untrusted address.
		{name: "xff", opts: []ratelimit.Option{trustLAN}, req: ipReq("10.0.0.1:1", "X-Forwarded-For", "203.0.113.7"), want: "203.0.113.7"},
		{name: "xff: what the client wrote is ignored", opts: []ratelimit.Option{trustLAN},
			req: ipReq("10.0.0.1:1", "X-Forwarded-For", "198.51.100.1, 10.9.9.9, 203.0.113.7"), want: "203.0.113.7"},
		{name: "xff: a chain of trusted proxies", opts: []ratelimit.Option{trustLAN},
			req: ipReq("10.0.0.1:1", "X-Forwarded-For", "198.51.100.1, 203.0.113.7, 10.0.0.3, 2001:db8:ffff::1"), want: "203.0.113.7"},
		{name: "xff: all trusted, the leftmost", opts: []ratelimit.Option{trustLAN},
			req: ipReq("10.0.0.1:1", "X-Forwarded-For", "10.0.0.3, 10.0.0.2"), want: "10.0.0.3"},
		{name: "xff: the proxy's own line comes last", opts: []ratelimit.Option{trustLAN},
			req: ipReq("10.0.0.1:1", "X-Forwarded-For", "198.51.100.66", "X-Forwarded-For", "203.0.113.7"), want: "203.0.113.7"},
		{name: "xff: absent", opts: []ratelimit.Option{trustLAN}, req: ipReq("10.0.0.1:1"), want: "10.0.0.1"},
		{name: "xff: ports, brackets, blanks", opts: []ratelimit.Option{trustLAN},
			req: ipReq("10.0.0.1:1", "X-Forwarded-For", " , [2001:db8::7]:4711 ,\t10.0.0.2:80,, "), want: "2001:db8::7"},
		{name: "xff: ipv4-mapped", opts: []ratelimit.Option{trustLAN}, req: ipReq("[::ffff:10.0.0.1]:1", "X-Forwarded-For", "::ffff:203.0.113.7"), want: "203.0.113.7"},
		{name: "xff: garbage to the left is never read", opts: []ratelimit.Option{trustLAN},
			req: ipReq("10.0.0.1:1", "X-Forwarded-For", "<script>, 203.0.113.7"), want: "203.0.113.7"},
		{name: "xff: garbage where the client should be", opts: []ratelimit.Option{trustLAN},
			req: ipReq("10.0.0.1:1", "X-Forwarded-For", "203.0.113.7, unknown"), want: `X-Forwarded-For entry "unknown" is not an IP address`, errors: true},
		{name: "xff: huge", opts: []ratelimit.Option{trustLAN},
			req: ipReq("10.0.0.1:1", "X-Forwarded-For", strings.Repeat("10.0.0.1,", 1000)), want: "more than 4096", errors: true},
		{name: "xff: other headers are ignored", opts: []ratelimit.Option{trustLAN},
			req: ipReq("10.0.0.1:1", "X-Real-IP", "203.0.113.67", "Forwarded", "for=203.0.113.68"), want: "10.0.0.1"},
		{name: "single trusted address", opts: []ratelimit.Option{ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.1")},
			req: ipReq("10.0.0.1:1", "X-Forwarded-For", "10.0.0.2, 203.0.113.7"), want: "203.0.113.7"},
		{name: "ipv4-mapped trusted prefix", opts: []ratelimit.Option{ratelimit.TrustProxies("X-Forwarded-For", "::ffff:10.0.0.0/104")},
			req: ipReq("10.0.0.1:1", "X-Forwarded-For", "203.0.113.7"), want: "203.0.113.7"},

		// Single-address headers.
		{name: "x-real-ip", opts: []ratelimit.Option{ratelimit.TrustProxies("X-Real-IP", "10.0.0.0/8", "2001:db8:ffff::/48")},
			req: ipReq("10.0.0.1:1", "X-Real-IP", "203.0.113.7", "X-Forwarded-For", "198.51.100.1"), want: "203.0.113.7"},
		{name: "x-real-ip absent", opts: []ratelimit.Option{ratelimit.TrustProxies("X-Real-IP", "10.0.0.0/8", "2001:db8:ffff::/48")},
			req: ipReq("10.0.0.1:1", "X-Forwarded-For", "198.51.100.1"), want: "10.0.0.1"},

		// Forwarded (RFC 7239).
		{name: "forwarded", opts: []ratelimit.Option{ratelimit.TrustProxies("Forwarded", "10.0.0.0/8", "2001:db8:ffff::/48")},
			req: ipReq("10.0.0.1:1", "Forwarded", `for=198.51.100.1, for="[2001:db8:cafe::17]:4711";proto=https`), want: "2001:db8:cafe::17"},
		{name: "forwarded: a chain of trusted proxies", opts: []ratelimit.Option{ratelimit.TrustProxies("Forwarded", "10.0.0.0/8", "2001:db8:ffff::/48")},
			req: ipReq("10.0.0.1:1", "Forwarded", `for=198.51.100.1;by=x, For=203.0.113.7;proto=https, for="10.0.0.2:8080"`), want: "203.0.113.7"},
		{name: "forwarded: two lines", opts: []ratelimit.Option{ratelimit.TrustProxies("Forwarded", "10.0.0.0/8", "2001:db8:ffff::/48")},
			req: ipReq("10.0.0.1:1", "Forwarded", `for=198.51.100.66`, "Forwarded", "for=203.0.113.7"), want: "203.0.113.7"},
		{name: "forwarded: unknown", opts: []ratelimit.Option{ratelimit.TrustProxies("Forwarded", "10.0.0.0/8", "2001:db8:ffff::/48")},
			req: ipReq("10.0.0.1:1", "Forwarded", "for=unknown"), want: `for="unknown" does not disclose the client address`, errors: true},
		{name: "forwarded: obfuscated", opts: []ratelimit.Option{ratelimit.TrustProxies("Forwarded", "10.0.0.0/8", "2001:db8:ffff::/48")},
			req: ipReq("10.0.0.1:1", "Forwarded", "for=_hidden"), want: "does not disclose", errors: true},
		{name: "forwarded: no for", opts: []ratelimit.Option{ratelimit.TrustProxies("Forwarded", "10.0.0.0/8", "2001:db8:ffff::/48")},
			req: ipReq("10.0.0.1:1", "Forwarded", "proto=https"), want: "has no for= parameter", errors: true},
		{name: "forwarded: malformed", opts: []ratelimit.Option{ratelimit.TrustProxies("Forwarded", "10.0.0.0/8", "2001:db8:ffff::/48")},
			req: ipReq("10.0.0.1:1", "Forwarded", `for="203.0.113.7`), want: "unterminated quoted string", errors: true},
		{name: "forwarded: x-forwarded-for is ignored", opts: []ratelimit.Option{ratelimit.TrustProxies("Forwarded", "10.0.0.0/8", "2001:db8:ffff::/48")},
			req: ipReq("10.0.0.1:1", "X-Forwarded-For", "203.0.113.66"), want: "10.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := ratelimit.NewIPResolver(c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := res.ClientIP(c.req)
			switch {
			case c.errors && err == nil:
				t.Errorf("got %v, want an error containing %q", got, c.want)
			case c.errors && !strings.Contains(err.Error(), c.want):
				t.Errorf("got error %q, want one containing %q", err, c.want)
			case !c.errors && (err != nil || got.String() != c.want):
				t.Errorf("got %v, %v; want %s", got, err, c.want)
			}
		})
	}
}

func TestKeyByIP(t *testing.T) {
	for _, c := range []struct {
		opts   []ratelimit.Option
		remote string
		want   string
	}{
		{nil, "192.0.2.1:1", "ip:192.0.2.1"},
		{nil, "[::ffff:192.0.2.1]:1", "ip:192.0.2.1"},
		{nil, "[2001:db8:1:2:3:4:5:6]:1", "ip:2001:db8:1:2::/64"},
		{nil, "[2001:db8:1:2::ffff]:1", "ip:2001:db8:1:2::/64"},
		{nil, "[fe80::1%eth0]:1", "ip:fe80::/64"},
		{[]ratelimit.Option{ratelimit.IPv6Prefix(48)}, "[2001:db8:1:2:3:4:5:6]:1", "ip:2001:db8:1::/48"},
		{[]ratelimit.Option{ratelimit.IPv6Prefix(128)}, "[2001:db8:1:2:3:4:5:6]:1", "ip:2001:db8:1:2:3:4:5:6"},
		{[]ratelimit.Option{ratelimit.IPv6Prefix(48)}, "192.0.2.1:1", "ip:192.0.2.1"},
	} {
		res, err := ratelimit.NewIPResolver(c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := res.Key(ipReq(c.remote))
		if err != nil || got != c.want {
			t.Errorf("KeyByIP from %s: got %q, %v; want %q", c.remote, got, err, c.want)
		}
	}
}

func TestIPOptionErrors(t *testing.T) {
	for _, c := range []struct {
		opts []ratelimit.Option
		want string
	}{
		{[]ratelimit.Option{ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/33")}, `TrustProxies: "10.0.0.0/33" is neither a CIDR prefix nor an IP address`},
		{[]ratelimit.Option{ratelimit.TrustProxies("X-Forwarded-For", "localhost")}, `TrustProxies: "localhost" is neither`},
		{[]ratelimit.Option{ratelimit.TrustProxies("X-Forwarded-For", "::ffff:10.0.0.0/8")}, `TrustProxies: "::ffff:10.0.0.0/8" is neither`},
		{[]ratelimit.Option{ratelimit.IPv6Prefix(0)}, "IPv6Prefix(0): bits must be between 1 and 128"},
		{[]ratelimit.Option{ratelimit.IPv6Prefix(129)}, "IPv6Prefix(129)"},
		{[]ratelimit.Option{ratelimit.TrustProxies("X Real IP", "10.0.0.0/8")}, `TrustProxies: "X Real IP" is not a valid header name`},
		{[]ratelimit.Option{ratelimit.TrustProxies("X-Real-IP")}, `TrustProxies("X-Real-Ip"): name at least one proxy`},
		{[]ratelimit.Option{nil}, "option 1 is nil"},
	} {
		_, err := ratelimit.NewIPResolver(c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
}

// FuzzClientIP holds the resolver to its rules on any input: it never panics; it returns a
// valid, normalised address or an error; without trusted proxies, or with an untrusted peer,
// headers never change the result; with a trusted peer, the result is the peer or an address
// written in the header.
func FuzzClientIP(f *testing.F) {
	f.Add("192.0.2.1:1234", "203.0.113.7", "198.51.100.1", "for=203.0.113.9")
	f.Add("10.0.0.1:1234", "198.51.100.1, 203.0.113.7, 10.0.0.2", "203.0.113.8", `for="[2001:db8::1]:80", for=10.0.0.2`)
	f.Add("[2001:db8:ffff::1]:443", "::ffff:203.0.113.7", "", `for=_hidden;by=x;proto=https`)
	f.Add("[fe80::1%eth0]:80", ",,", "unknown", `for="\"\\"`)
	f.Add("@", "", "", "")
	plain, _ := ratelimit.NewIPResolver()
	xff, _ := ratelimit.NewIPResolver(trustLAN)
	realIP, _ := ratelimit.NewIPResolver(ratelimit.TrustProxies("X-Real-IP", "10.0.0.0/8", "2001:db8:ffff::/48"))
	fwd, _ := ratelimit.NewIPResolver(ratelimit.TrustProxies("Forwarded", "10.0.0.0/8", "2001:db8:ffff::/48"))
	lan := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::/48")}
	trusted := func(a netip.Addr) bool { return lan[0].Contains(a) || lan[1].Contains(a) }

	f.Fuzz(func(t *testing.T, remote, xffValue, realIPValue, fwdValue string) {
		bare := ipReq(remote)
		spoofed := ipReq(remote, "X-Forwarded-For", xffValue, "X-Real-IP", realIPValue, "Forwarded", fwdValue)
		peer, peerErr := plain.ClientIP(bare)
		for _, r := range []*ratelimit.IPResolver{plain, xff, realIP, fwd} {
			got, err := r.ClientIP(spoofed)
			if err != nil {
				if peerErr == nil && (r == plain || !trusted(peer)) {
					t.Fatalf("error %v, but the peer %v is the client", err, peer)
				}
				continue
			}
			if !got.IsValid() || got.Zone() != "" || got.Is4In6() {
				t.Fatalf("got %v: not a normalised address", got)
			}
			switch {
			case peerErr != nil:
				t.Fatalf("got %v from a peer address %q that is not an IP address", got, remote)
			case (r == plain || !trusted(peer)) && got != peer:
				t.Fatalf("got %v, want the peer %v: the headers were trusted", got, peer)
			case got != peer && !fromHeader(got, r, xff, realIP, xffValue, realIPValue, fwdValue):
				t.Fatalf("got %v, which is neither the peer %v nor in the proxy header", got, peer)
			}
			key, err := r.Key(spoofed)
			if err != nil || !strings.HasPrefix(key, "ip:") || len(key) > 64 {
				t.Fatalf("Key: got %q, %v", key, err)
			}
		}
	})
}

// fromHeader reports whether a is one of the addresses of the header resolver r reads.
func fromHeader(a netip.Addr, r, xff, realIP *ratelimit.IPResolver, xffValue, realIPValue, fwdValue string) bool {
	var nodes []string
	switch r {
	case xff:
		nodes = strings.Split(xffValue, ",")
	case realIP:
		nodes = strings.Split(realIPValue, ",")
	default:
		elems, _ := ratelimit.ParseForwarded(fwdValue)
		for _, e := range elems {
			nodes = append(nodes, e[0])
		}
	}
	for _, n := range nodes {
		if b, err := ratelimit.ParseForwardedNode(strings.Trim(n, " \t")); err == nil && b == a {
			return true
		}
		if ap, err := netip.ParseAddrPort(strings.Trim(n, " \t")); err == nil && ap.Addr().WithZone("").Unmap() == a {
			return true
		}
		if b, err := netip.ParseAddr(strings.Trim(n, " \t[]")); err == nil && b.WithZone("").Unmap() == a {
			return true
		}
	}
	return false
}

// A request from a trusted proxy without the header the proxies write (TrustProxies names
// X-Real-IP; the load balancer writes X-Forwarded-For, or sends a health check of its own) is
// limited by the proxy's own address, as the peer it is: every client behind that proxy then
// shares one quota. It must not be silent: counted each time (no_proxy_header), logged once
// per guard, naming the header the proxy did send when it sent one, at warning level. A
// request that carries the header is neither; a Unix socket's is refused 400, not counted.
func TestProxyWithoutHeader(t *testing.T) {
	var logged syncBuffer
	obs := &fallbackCounter{}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()), ratelimit.WithObserver(obs.observer()),
		ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	l := mustNew(t, store, ratelimit.Policy{Limit: 2, Window: time.Minute})
	h := ratelimit.Middleware(l, ratelimit.TrustProxies("X-Real-IP", "10.0.0.0/8", "unix"))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	serve := func(remote string, header ...string) int {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		for i := 0; i < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}

	// Behind the header it names, each client has its own quota, and nothing is reported.
	var codes []int
	for i := range 3 {
		codes = append(codes, serve("10.0.0.1:5000", "X-Real-IP", fmt.Sprintf("203.0.113.%d", i+1)))
	}
	if fmt.Sprint(codes) != "[200 200 200]" || len(obs.n) != 0 || logged.String() != "" {
		t.Fatalf("three clients behind the proxy's X-Real-IP: %v, fallbacks %v, logged %q; want each its own quota, nothing reported", codes, obs.n, logged.String())
	}

	// The load balancer writes X-Forwarded-For: ten clients share the proxy's quota.
	codes = nil
	for i := range 10 {
		codes = append(codes, serve("10.0.0.2:5000", "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i+1)))
	}
	if fmt.Sprint(codes) != "[200 200 429 429 429 429 429 429 429 429]" {
		t.Errorf("ten clients behind a proxy that writes no X-Real-IP: %v; want them limited as the proxy's address, 10.0.0.2", codes)
	}
	if obs.n["no_proxy_header"] != 10 {
		t.Errorf("fallbacks counted: %v; want 10 for no_proxy_header", obs.n)
	}
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "reason=no_proxy_header") ||
		!strings.Contains(lines[0], "header=X-Real-Ip") || !strings.Contains(lines[0], "sent=X-Forwarded-For") || !strings.Contains(lines[0], "proxy=10.0.0.2") {
		t.Errorf("logged:\n%s\nwant one warning with reason=no_proxy_header, header=X-Real-Ip, sent=X-Forwarded-For, proxy=10.0.0.2", logged.String())
	}

	// A health check of the proxy's own, without any such header: limited as the proxy,
	// counted, and logged once more (it says less); then neither is logged again.
	for range 3 {
		serve("10.0.0.3:5000")
		serve("10.0.0.4:5000", "X-Forwarded-For", "203.0.113.99")
	}
	if obs.n["no_proxy_header"] != 16 {
		t.Errorf("fallbacks counted: %v; want 16 for no_proxy_header", obs.n)
	}
	lines = strings.Split(strings.TrimSpace(logged.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "level=WARN") || !strings.Contains(lines[1], "reason=no_proxy_header") ||
		!strings.Contains(lines[1], "proxy=10.0.0.3") || strings.Contains(lines[1], "sent=") {
		t.Errorf("logged:\n%s\nwant a second warning, for the proxy 10.0.0.3 that sent no forwarding header, and no more", logged.String())
	}

	// KeyByIP in a key function of the guard's reads the same resolver.
	joined := &fallbackCounter{}
	l = mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(joined.observer()), ratelimit.WithLogger(slog.New(slog.DiscardHandler))), ratelimit.Policy{Limit: 2, Window: time.Minute})
	g, err := ratelimit.NewGuard(l, ratelimit.TrustProxies("X-Real-IP", "10.0.0.0/8"), ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByMethod())))
	if err != nil {
		t.Fatal(err)
	}
	if o := g.Check(ipReq("10.0.0.2:5000", "X-Forwarded-For", "203.0.113.1")); !o.Proceed || joined.n["no_proxy_header"] != 1 {
		t.Errorf("KeyJoin(KeyByIP(), KeyByMethod()) behind a proxy that writes no X-Real-IP: proceed %v, fallbacks %v; want proceed, 1 no_proxy_header", o.Proceed, joined.n)
	}

	// A Unix socket has no address of its own: refused, as before, and no fallback.
	if code := serve("@"); code != http.StatusBadRequest {
		t.Errorf("a request on the trusted Unix socket without X-Real-IP: %d, want 400", code)
	}
	if len(obs.n) != 1 || obs.n["no_proxy_header"] != 16 {
		t.Errorf("fallbacks counted after the Unix socket's request: %v; want only the 16 no_proxy_header", obs.n)
	}
	// A header of empty elements names no client either.
	if code := serve("10.0.0.5:5000", "X-Real-IP", " , "); code != http.StatusOK || obs.n["no_proxy_header"] != 17 {
		t.Errorf("X-Real-IP of empty elements from a trusted proxy: %d, fallbacks %v; want 200, 17 no_proxy_header", code, obs.n)
	}
}

// A route's own guard, given no client-IP option, inside the middleware around every route
// that trusts the load balancer (README's login limit behind a load balancer), reads the
// client IP through the same proxies: it read the load balancer's address, so every client
// shared one login quota and one attacker locked everyone out. So too when the outer guard
// decides nothing about the request (it skips the route, or allows the client's network, with
// no observer): the net/http middleware handed nothing over then.
func TestInnerGuardReadsTheClientIPAsTheOuterDoes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		outer []ratelimit.Option
	}{
		{"the outer guard limits", nil},
		{"the outer guard skips", []ratelimit.Option{ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool { return r.Path() == "/login" }})}},
		{"the outer guard allows", []ratelimit.Option{ratelimit.WithAccess(ratelimit.Access{Allow: []string{"198.51.100.0/24", "203.0.113.0/24"}})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))
			perClient := mustNew(t, store, ratelimit.Policy{Name: "api", Limit: 100, Window: time.Minute})
			login := mustNew(t, store, ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})
			mux := http.NewServeMux()
			mux.Handle("POST /login", ratelimit.Middleware(login, ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute())))(
				http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
			h := ratelimit.Middleware(perClient, append([]ratelimit.Option{ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8")}, tc.outer...)...)(mux)
			send := func(client string) int {
				r := httptest.NewRequest(http.MethodPost, "/login", nil)
				r.RemoteAddr = "10.0.0.1:4000" // the load balancer
				r.Header.Set("X-Forwarded-For", client)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w.Code
			}
			for range 5 {
				send("203.0.113.1")
			}
			if got := send("203.0.113.1"); got != http.StatusTooManyRequests {
				t.Errorf("the sixth login of 203.0.113.1: %d, want 429", got)
			}
			if got := send("198.51.100.7"); got != http.StatusOK {
				t.Errorf("the first login of another client, 198.51.100.7: %d, want 200 (its own quota)", got)
			}
		})
	}
}
