package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
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
var keyFallbackReasons = [...]string{"no_header", "no_user", "no_route", "no_key"}

// noKeyReason returns the reason of err, an ErrNoKey.
func noKeyReason(err error) (int, string) {
	var nk *noKey
	if errors.As(err, &nk) {
		for i, r := range keyFallbackReasons {
			if r == nk.reason {
				return i, r
			}
		}
	}
	return len(keyFallbackReasons) - 1, "no_key"
}

// keyFallbacks remembers which reasons of falling back to the client IP a guard has logged:
// each is logged once, and counted every time.
type keyFallbacks struct{ logged atomic.Uint32 }

// fellBack reports that r, for which the guard's key function found no key (err), is limited
// by its client IP.
func (g *Guard) fellBack(r Request, err error) {
	i, reason := noKeyReason(err)
	if g.observer != nil {
		g.observer.KeyFellBack(reason)
	}
	bit := uint32(1) << i
	if old := g.fallbacks.logged.Load(); old&bit != 0 || !g.fallbacks.logged.CompareAndSwap(old, old|bit) {
		return
	}
	level, msg := slog.LevelInfo, "ratelimit: a request has no key of the guard's kind; such requests are limited by their client IP (RejectMissingKey refuses them instead). Logged once per guard; counted every time"
	if reason == "no_route" {
		level = slog.LevelWarn
		msg = "ratelimit: KeyByRoute found no route: the middleware runs before the router has matched one (around a ServeMux, say), so requests are limited by their client IP instead of their route. Give the middleware the router (ratelimit.WithRoutes(mux)) or put it on the handler you register. Logged once per guard; counted every time"
	}
	g.log.get().LogAttrs(context.WithoutCancel(r.Context()), level, msg, slog.String("reason", reason), slog.String("error", err.Error()))
}

// Router is what knows the route pattern of a request before it routes it: *http.ServeMux,
// whose Handler returns the pattern that matches a request, is one.
type Router interface {
	Handler(r *http.Request) (h http.Handler, pattern string)
}

// WithRoutes gives net/http middleware the router it stands in front of: a request that has
// no route yet (the middleware wraps the whole mux) gets the pattern router matches for it,
// once, so that [KeyByRoute] keys it by its route rather than falling back to its client IP.
//
//	http.ListenAndServe(":8080", ratelimit.Middleware(l,
//		ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute())),
//		ratelimit.WithRoutes(mux))(mux))
//
// The adapters need none: their frameworks route before middleware runs.
func WithRoutes(router Router) Option {
	return func(gc *guardConfig) {
		if router == nil {
			gc.errorf("WithRoutes(nil): give it the router the middleware stands in front of, e.g. the *http.ServeMux")
			return
		}
		gc.routes = router
	}
}

// routedRequest is *http.Request seen as a Request, with the route its router would match.
type routedRequest struct {
	httpRequest
	pattern string
}

func (r routedRequest) Route() string { return r.pattern }
