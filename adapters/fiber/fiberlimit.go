// Package fiberlimit rate-limits Fiber v2 routes with [github.com/a7d3e0dd/ratelimit]: the
// same checks, headers and responses as [ratelimit.Middleware], as a Fiber handler.
//
//	app.Use(fiberlimit.New(limiter))
//
// Options are the core's ([ratelimit.Option]). A per-route limit is a handler of its route or
// group:
//
//	app.Post("/login", fiberlimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})), login)
//
// Requests reach key functions as a [ratelimit.Request] read straight from fasthttp, without
// building an *http.Request. The client IP follows the core's rules ([ratelimit.KeyByIP]), not
// Fiber's IP or ProxyHeader settings. Request.Route is the pattern of a route's handler, and ""
// in middleware of app.Use or a group, where Fiber has not matched the route yet.
// Request.Path, like every string Fiber hands a handler, is valid until the handler returns;
// header values are copied.
//
// Request.Context is Fiber's UserContext: context.Background unless the app sets one
// (Ctx.SetUserContext), and the context whose values [ratelimit.KeyByUser] reads. fasthttp
// does not tell a handler that its client went away, so, unlike with net/http, a shaping wait
// (algorithms.LeakyBucket{Shaping: true} delaying a request to its slot) runs to its end even
// if the client has gone, and the handler then runs for nobody. The wait is still bounded by
// the policy's burst: at most Burst intervals of Window/Limit ([ratelimit.Policy.Burst]). Nor
// does it end when the app shuts down: Shutdown waits for it, as for any request in flight.
package fiberlimit

import (
	"context"
	"net"
	"net/netip"
	"reflect"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/a7d3e0dd/ratelimit"
)

// New returns a Fiber handler that limits requests with l, configured by opts. It panics if
// an option is invalid, when the app is being set up; [FromGuard] with [ratelimit.NewGuard]
// returns the error instead. It never panics on a request.
func New(l *ratelimit.Limiter, opts ...ratelimit.Option) fiber.Handler {
	g, err := ratelimit.NewGuard(l, opts...)
	if err != nil {
		panic(err)
	}
	return FromGuard(g)
}

// FromGuard returns a Fiber handler that limits requests with g. A refused request is
// answered and the next handler is not called. With [ratelimit.CountIf], an error the next
// handlers return is answered by the app's ErrorHandler (as Fiber's logger does) before its
// status is counted, and not returned.
func FromGuard(g *ratelimit.Guard) fiber.Handler {
	return func(c *fiber.Ctx) error {
		o := g.Check(request{c})
		o.ResponseHeaders(c.Set)
		if !o.Proceed {
			return c.Status(o.Status).Send(o.Body)
		}
		err := c.Next()
		if !o.Pending {
			return err
		}
		if err != nil { // answer it now, as Fiber's logger does, so the status counted is the one sent
			if c.App().ErrorHandler(c, err) != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		g.Done(&o, c.Response().StatusCode())
		return nil
	}
}

// request is a Fiber request seen as a [ratelimit.Request]. A struct of one pointer converts
// to an interface without allocating.
type request struct{ c *fiber.Ctx }

// Context returns the app's UserContext, which is never cancelled unless the app made it so.
// The fasthttp.RequestCtx (Ctx.Context), whose Done is closed when the server shuts down, is
// not used in its place: its Value reads Fiber's Locals, not the UserContext that KeyByUser
// must see; a deadline derived from it, as the guard sets for a store call, costs a goroutine
// per call (it is no stdlib context); and it is recycled for the next request once the handler
// returns, while a store call abandoned at its deadline may still hold it.
func (r request) Context() context.Context { return r.c.UserContext() }
func (r request) Method() string           { return r.c.Method() }
func (r request) Path() string             { return r.c.Path() }

// Route returns the pattern of the route whose handler runs, or "" in middleware of app.Use or
// a group, whose Path is only a prefix: keying by it would put every route in one quota.
func (r request) Route() string {
	rt := r.c.Route()
	if useField != nil && reflect.ValueOf(rt).Elem().FieldByIndex(useField).Bool() {
		return ""
	}
	return rt.Path
}

// useField locates the unexported flag of fiber.Route that marks app.Use and group middleware
// (Fiber exports no other way to tell); nil if this Fiber has none.
var useField = func() []int {
	f, ok := reflect.TypeOf(fiber.Route{}).FieldByName("use")
	if !ok || f.Type.Kind() != reflect.Bool {
		return nil
	}
	return f.Index
}()

// Header joins the field lines of the header with ", ", as the core expects. The value is
// copied: fasthttp reuses its buffer once the handler returns.
func (r request) Header(name string) string {
	switch lines := r.c.Request().Header.PeekAll(name); len(lines) {
	case 0:
		return ""
	case 1:
		return string(lines[0])
	default:
		var b strings.Builder
		for i, l := range lines {
			if i > 0 {
				b.WriteString(", ")
			}
			b.Write(l)
		}
		return b.String()
	}
}

// RemoteAddr formats the peer's address with one allocation (net.TCPAddr.String takes more),
// an IPv4 address in its 4-byte form however the listener holds it.
func (r request) RemoteAddr() string {
	addr := r.c.Context().RemoteAddr()
	if a, ok := addr.(*net.TCPAddr); ok {
		ap := a.AddrPort()
		var buf [64]byte
		return string(netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).AppendTo(buf[:0]))
	}
	return addr.String()
}
