// Package echolimit rate-limits Echo v4 routes with [github.com/a7d3e0dd/ratelimit]: the same
// checks, headers and responses as [ratelimit.Middleware], as Echo middleware.
//
//	e.Use(echolimit.New(limiter))
//
// Options are the core's ([ratelimit.Option]). A per-route limit is route middleware:
//
//	e.POST("/login", login, echolimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})))
//
// Key functions see Echo's matched route ([echo.Context.Path]) as [ratelimit.Request.Route],
// and "" when no route matched (Echo answers 404), whatever the Echo version: before v4.10.1
// Echo reports the raw request path there, with which [ratelimit.KeyByRoute] would give every
// unknown path a quota of its own. They resolve the client IP with the core's rules
// ([ratelimit.KeyByIP]), not Echo's RealIP.
package echolimit

import (
	"context"
	"reflect"

	"github.com/labstack/echo/v4"

	"github.com/a7d3e0dd/ratelimit"
)

// New returns Echo middleware that limits requests with l, configured by opts. It panics if an
// option is invalid, when the server is being set up; [FromGuard] with [ratelimit.NewGuard]
// returns the error instead. It never panics on a request.
func New(l *ratelimit.Limiter, opts ...ratelimit.Option) echo.MiddlewareFunc {
	g, err := ratelimit.NewGuard(l, opts...)
	if err != nil {
		panic(err)
	}
	return FromGuard(g)
}

// FromGuard returns Echo middleware that limits requests with g. A refused request is answered
// and the next handler is not called. With [ratelimit.CountIf], an error the handler returns is
// answered by the server's HTTPErrorHandler (as Echo's own logger does) before its status is
// counted, and is still returned.
func FromGuard(g *ratelimit.Guard) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			o := g.Check(request{c})
			o.Write(c.Response())
			if !o.Proceed {
				return nil
			}
			err := next(c)
			if o.Pending {
				if err != nil {
					c.Error(err)
				}
				g.Done(&o, c.Response().Status)
			}
			return err
		}
	}
}

// request is an Echo request seen as a [ratelimit.Request]. It holds an interface, two words,
// so converting it to one allocates: the one allocation this adapter adds (Echo itself builds
// the chain of e.Use middleware for every request, one closure per middleware).
type request struct{ c echo.Context }

func (r request) Context() context.Context { return r.c.Request().Context() }
func (r request) Method() string           { return r.c.Request().Method }
func (r request) Path() string             { return r.c.Request().URL.Path }
func (r request) RemoteAddr() string       { return r.c.Request().RemoteAddr }

func (r request) Header(name string) string {
	return ratelimit.HTTPRequest(r.c.Request()).Header(name)
}

// Route returns the matched route's pattern, or "" when no route matched. Every Echo v4 gives
// an unmatched request [echo.NotFoundHandler] as its handler, but Echo before v4.10.1 leaves
// the raw request path in [echo.Context.Path] when its router gives up early, so the handler,
// not the path, tells an unmatched request. The handler is compared by code pointer with
// echo.NotFoundHandler as it is when the request is checked, so one the program put there
// instead is recognised too. A registered route keeps its pattern whatever its handler (Echo
// wraps every one in a closure of its own): RouteNotFound routes, the catch-all routes of a
// group's middleware ("/api/*"), and routes that lack the request's method (405).
func (r request) Route() string {
	if h := r.c.Handler(); h == nil || funcPC(h) == funcPC(echo.NotFoundHandler) {
		return ""
	}
	return r.c.Path()
}

// funcPC returns the code pointer of h, without allocating (a func is pointer-shaped).
func funcPC(h echo.HandlerFunc) uintptr { return reflect.ValueOf(h).Pointer() }
