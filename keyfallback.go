package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"path"
	"strings"
	"sync/atomic"
)

// noKey is the error of a built-in key function that found no key of its kind: it is
// [ErrNoKey], and says why, in a short label the metrics modules can use.
type noKey struct {
	reason string // no_header, no_user, no_route
	detail string
}

func (e *noKey) Error() string { return "ratelimit: request has no key: " + e.detail }
func (e *noKey) Unwrap() error { return ErrNoKey }

var (
	errNoHeader = &noKey{"no_header", "the header is absent"}
	errNoUser   = &noKey{"no_user", "no user is stored for it"}
	errNoRoute  = &noKey{"no_route", "no router has matched a route for it yet"}
)

// keyFallbackReasons are the reasons of observe.KeyFallbackReasons, in its order.
var keyFallbackReasons = [...]string{"no_header", "no_user", "no_route", "no_key", "no_proxy_header", "resolver_failed"}

// Indexes of keyFallbackReasons, and the bits of keyFallbacks.logged.
const (
	reasonNoKey          = 3
	reasonNoProxyHeader  = 4
	reasonResolverFailed = 5 // logged by the guard's error handler, not here
	// loggedProxySent is the bit of a trusted proxy that sent another forwarding header than
	// the one TrustProxies names: logged apart from reasonNoProxyHeader, as it is more likely
	// a mistake, and says which header.
	loggedProxySent = len(keyFallbackReasons)
)

// noKeyReason returns the reason of err, an ErrNoKey.
func noKeyReason(err error) (int, string) {
	var nk *noKey
	if errors.As(err, &nk) {
		for i, r := range keyFallbackReasons[:reasonNoKey] {
			if r == nk.reason {
				return i, r
			}
		}
	}
	return reasonNoKey, keyFallbackReasons[reasonNoKey]
}

// keyFallbacks remembers which reasons of falling back a guard has logged: each is logged
// once, and counted every time.
type keyFallbacks struct{ logged atomic.Uint32 }

// first reports whether bit i was not set yet, setting it.
func (f *keyFallbacks) first(i int) bool {
	bit := uint32(1) << i
	for {
		old := f.logged.Load()
		if old&bit != 0 {
			return false
		}
		if f.logged.CompareAndSwap(old, old|bit) {
			return true
		}
	}
}

// fellBack reports that r, for which the guard's key function found no key (err), is limited
// by its client IP.
func (g *Guard) fellBack(r Request, err error) {
	i, reason := noKeyReason(err)
	if g.observer != nil {
		g.observer.keyFellBack(reason)
	}
	if !g.fallbacks.first(i) {
		return
	}
	level, msg := slog.LevelInfo, "ratelimit: a request has no key of the guard's kind; such requests are limited by their client IP (WithAccess(Access{MissingKey: 401}) refuses them instead). Logged once per guard; counted every time"
	if reason == "no_route" {
		level = slog.LevelWarn
		msg = "ratelimit: KeyByRoute found no route: the middleware runs before the router has matched one (around a handler in front of the ServeMux, say), so requests are limited by their client IP instead of their route. Wrap the router itself (the middleware asks a ServeMux the route), not a handler around it, or put the middleware on the handler you register. Logged once per guard; counted every time"
	}
	g.log.get().LogAttrs(context.WithoutCancel(r.Context()), level, msg, slog.String("reason", reason), slog.String("error", err.Error()))
}

// forwardingHeaders are the headers proxies commonly write a client's address in, in canonical
// form: the log of a request from a trusted proxy without the header TrustProxies names says
// which of them it carried instead.
var forwardingHeaders = [...]string{"X-Forwarded-For", "Forwarded", "X-Real-Ip", "Cf-Connecting-Ip", "True-Client-Ip", "Fastly-Client-Ip", "X-Client-Ip"}

// proxySentNoClient reports that r, whose peer is the trusted proxy at proxy, names no client
// in header, the one the proxies write, and is limited by the proxy's own address: right for
// a request of the proxy's own (a health check), but every client the proxy forwards so
// shares that one quota. Counted every time; logged once per guard for a request that carries
// no forwarding header, and once for one that carries another (the headers are looked at only
// until both are logged).
func (g *Guard) proxySentNoClient(r Request, proxy netip.Addr, header string) {
	if g.observer != nil {
		g.observer.keyFellBack(keyFallbackReasons[reasonNoProxyHeader])
	}
	const both = 1<<reasonNoProxyHeader | 1<<loggedProxySent
	if g.fallbacks.logged.Load()&both == both {
		return
	}
	sent := ""
	for _, h := range forwardingHeaders {
		if h != header && r.Header(h) != "" {
			sent = h
			break
		}
	}
	attrs := []slog.Attr{slog.String("reason", keyFallbackReasons[reasonNoProxyHeader]), slog.String("header", header), slog.String("proxy", proxy.String())}
	msg := "ratelimit: a request from a trusted proxy names no client in the header TrustProxies names, so it is limited by the proxy's own address: " +
		"right for the proxy's own requests (health checks), but clients it forwards without that header all share the proxy's quota. Logged once per guard; counted every time"
	bit := reasonNoProxyHeader
	if sent != "" {
		bit = loggedProxySent
		attrs = append(attrs, slog.String("sent", sent))
		msg = "ratelimit: a trusted proxy sent another forwarding header than the one TrustProxies names, so its clients are limited by the proxy's own address and share one quota. " +
			"Name the header the proxy writes in TrustProxies. Logged once per guard; counted every time"
	}
	if !g.fallbacks.first(bit) {
		return
	}
	g.log.get().LogAttrs(context.WithoutCancel(r.Context()), slog.LevelWarn, msg, attrs...)
}

// router is what knows the route pattern of a request before it routes it: *http.ServeMux,
// whose Handler returns the pattern that matches a request, is one. Middleware given such a
// handler to wrap (see FromGuard) asks it the route of each request that has none yet.
type router = interface {
	Handler(r *http.Request) (h http.Handler, pattern string)
}

// routeOf returns the pattern router matches for r, or "" when it matches none. A ServeMux
// answers a path that matches only with a slash added ("/users/a" under "/users/{id}/") with
// a redirect, and names as its pattern the path it redirects to, the client's own path and a
// slash: for a CONNECT request, and for every request before Go 1.25 (golang/go#73688). Keyed
// by that, every path a client made up would have a quota of its own, stored; the route of
// such a request is unknown instead, and it is limited by its client IP (a pattern registered
// as that very path, such as "/files/" for a request of "/files", is a redirect too). The
// path named is the decoded one (URL.Path, cleaned), not the path as escaped: both are
// compared, or a path holding an escape ("/users/1%41") would still be a route of its own.
func routeOf(router router, r *http.Request) string {
	_, pattern := router.Handler(r)
	if dir, ok := strings.CutSuffix(pattern, "/"); ok && r.URL != nil && dir != "" {
		for _, p := range [2]string{r.URL.EscapedPath(), r.URL.Path} {
			if dir == p || dir == path.Clean("/"+p) {
				return ""
			}
		}
	}
	return pattern
}

// routedRequest is *http.Request seen as a Request by middleware that wraps its router: the
// request has no route yet, and its route is the pattern the router would match, looked up
// the first time something asks for it (a key function of routes, a metric's label), so that
// a guard that keys by IP never pays for it.
type routedRequest struct {
	httpRequest
	router  router
	pattern string
	looked  bool
}

func (r *routedRequest) Route() string {
	if !r.looked {
		r.pattern, r.looked = routeOf(r.router, r.r), true
	}
	return r.pattern
}
