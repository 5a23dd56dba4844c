// Package echolimit rate-limits Echo v4 routes with [github.com/a7d3e0dd/ratelimit]: the same
// checks, headers and responses as [ratelimit.Middleware], as Echo middleware.
//
//	e.Use(echolimit.New(limiter))
//
// Options are the core's ([ratelimit.Option]). A per-route limit is route middleware:
//
//	e.POST("/login", login, echolimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})))
//
// The handler reads the limiter's decision (remaining quota, binding policy) with [Decision]:
//
//	if d, ok := echolimit.Decision(c); ok { c.Logger().Infof("%d left", d.Remaining) }
//
// The middleware stores it with c.Set under the key "github.com/a7d3e0dd/ratelimit/adapters/echo.decision";
// leave that key alone. A per-route limit's decision replaces the server's.
//
// Key functions see the values of c.Set as [ratelimit.Request.Value] (for
// [ratelimit.KeyByUser]), and Echo's matched route ([echo.Context.Path]) as
// [ratelimit.Request.Route], "" when no route matched (Echo answers 404), whatever the Echo
// version: before v4.10.1 Echo reports the raw request path there, with which
// [ratelimit.KeyByRoute] would give every unknown path a quota of its own. They resolve the
// client IP with the core's rules ([ratelimit.KeyByIP]), not Echo's RealIP.
package echolimit

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/textproto"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
)

// decisionKey is the c.Set key of the decision the middleware hands its handler, and
// outcomeKey that of its outcome, which a guard after it takes the report of (see
// [ratelimit.Request]): a request through two guards is counted once.
const (
	decisionKey = "github.com/a7d3e0dd/ratelimit/adapters/echo.decision"
	outcomeKey  = "github.com/a7d3e0dd/ratelimit/adapters/echo.outcome"
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
			checked := g.Check(request{c})
			checked.Write(c.Response())
			if !checked.Proceed {
				return nil
			}
			// The outcome goes to the heap only for a request that proceeds (a refusal allocates
			// none): a guard after this one takes its report through it (see OuterOutcome).
			o := new(ratelimit.Outcome)
			*o = checked
			c.Set(outcomeKey, o)
			if o.Decision.Limit > 0 { // the limiter decided: not skipped, not failed open
				c.Set(decisionKey, &o.Decision)
			}
			// Completes the outcome when the handler panicked (its slots come back all the
			// same), and tells the report of one that waits for no status. After a Done below,
			// it does nothing.
			defer panicked(g, o, c)
			if o.Meter != nil { // ChargeAfter: the handler reports its cost through its request's context
				c.SetRequest(c.Request().WithContext(cost.NewContext(c.Request().Context(), o.Meter)))
			}
			var hw *hijackWriter
			if o.Pending {
				r := c.Response()
				hw = &hijackWriter{ResponseWriter: r.Writer, response: r}
				r.Writer = hw
				defer func() {
					r.Writer = hw.ResponseWriter
				}()
			}
			err := next(c)
			if o.Pending {
				if err != nil && !hw.hijacked {
					c.Error(err)
				}
				s := c.Response().Status
				if hw.hijacked {
					s = http.StatusSwitchingProtocols
				}
				if o.Meter != nil {
					o.Meter.Wrote(c.Response().Size)
				}
				g.Done(o, status(s))
			}
			return err
		}
	}
}

// panicked completes the outcome of a handler that panicked, as a 500 when it had answered
// nothing, else with the status its client got (its client left mid-stream, so that
// httputil.ReverseProxy panics with http.ErrAbortHandler; a cleanup failed after the answer):
// it was served as far as it got. It passes the panic on.
// After Done, it does nothing (but tell a report that waits for no status).
func panicked(g *ratelimit.Guard, o *ratelimit.Outcome, c echo.Context) {
	if !o.Pending {
		g.Done(o, http.StatusInternalServerError)
		return
	}
	v := recover()
	s := http.StatusInternalServerError
	if r := c.Response(); r.Committed { // it had answered: its client got that status
		s = status(r.Status)
		if o.Meter != nil {
			o.Meter.Wrote(r.Size)
		}
	}
	g.Done(o, s)
	if v != nil {
		panic(v)
	}
}

// hijackWriter records that a handler took the connection over before answering (a WebSocket
// upgrade), so that the guard is told 101 Switching Protocols, as ratelimit.Middleware tells
// it: Echo's Response, never written to, says 200. It stands in front of the Response's
// writer only for a request whose guard waits for its status (CountIf, in-flight slots).
type hijackWriter struct {
	http.ResponseWriter
	response *echo.Response
	hijacked bool
}

// Hijack implements [http.Hijacker].
func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	committed := w.response.Committed
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && !committed {
		w.hijacked = true
	}
	return conn, rw, err
}

// FlushError flushes the writer, for [http.ResponseController]; Flush, for Echo's Response
// before v4.10, which asks its writer for [http.Flusher].
func (w *hijackWriter) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush implements [http.Flusher].
func (w *hijackWriter) Flush() { _ = w.FlushError() }

// Unwrap returns the writer in front of which w stands, for [http.ResponseController].
func (w *hijackWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// status returns the status the client got when Echo's Response holds s: an interim status
// (1xx but 101), which the Response keeps, refusing every later one, was followed on the wire by
// the 200 net/http sends with the body.
func status(s int) int {
	if s < http.StatusOK && s != http.StatusSwitchingProtocols {
		return http.StatusOK
	}
	return s
}

// Decision returns the decision the middleware made for the request of c: the remaining quota,
// the binding policy, every policy's result. It reports false when no limiter decided (the
// request was skipped, or the store failed and the request failed open).
func Decision(c echo.Context) (ratelimit.Decision, bool) {
	if d, ok := c.Get(decisionKey).(*ratelimit.Decision); ok {
		return *d, true
	}
	return ratelimit.Decision{}, false
}

// request is an Echo request seen as a [ratelimit.Request]. It holds an interface, two words,
// so converting it to one allocates (as Echo does, building the e.Use chain for each request).
type request struct{ c echo.Context }

func (r request) Context() context.Context { return r.c.Request().Context() }
func (r request) Method() string           { return r.c.Request().Method }
func (r request) Path() string             { return r.c.Request().URL.Path }

// EscapedPath returns the path as the client escaped it, on which Echo routes (see
// [ratelimit.Request]).
func (r request) EscapedPath() string       { return r.c.Request().URL.EscapedPath() }
func (r request) RemoteAddr() string        { return r.c.Request().RemoteAddr }
func (r request) Header(name string) string { return header(r.c.Request(), name) }

// OuterOutcome returns the outcome of the guard before this one on the request, if any (see
// [ratelimit.Request]).
func (r request) OuterOutcome() *ratelimit.Outcome {
	o, _ := r.c.Get(outcomeKey).(*ratelimit.Outcome)
	return o
}

// Value returns what c.Set stored under a string key, else the request context's value.
func (r request) Value(key any) any {
	if k, ok := key.(string); ok {
		if v := r.c.Get(k); v != nil {
			return v
		}
	}
	return r.c.Request().Context().Value(key)
}

// header joins the field lines of the named header of r with ", ", without allocating for
// one line. The Host header is r.Host: net/http moves it out of the header map.
func header(r *http.Request, name string) string {
	name = textproto.CanonicalMIMEHeaderKey(name)
	if name == "Host" {
		return r.Host
	}
	switch v := r.Header[name]; len(v) {
	case 0:
		return ""
	case 1:
		return v[0]
	default:
		return strings.Join(v, ", ")
	}
}

// Route returns the matched route's pattern, or "" when no route matched. Echo before v4.10.1
// leaves the raw path in [echo.Context.Path] when its router gives up early, so the handler
// tells an unmatched request: [echo.NotFoundHandler], compared by code pointer as it is when the
// request is checked (a replacement is recognised too). A registered route keeps its pattern
// whatever its handler: RouteNotFound routes, a group middleware's catch-all ("/api/*"), 405s.
func (r request) Route() string {
	if h := r.c.Handler(); h == nil || funcPC(h) == funcPC(echo.NotFoundHandler) {
		return ""
	}
	return r.c.Path()
}

// funcPC returns the code pointer of h, without allocating (a func is pointer-shaped).
func funcPC(h echo.HandlerFunc) uintptr { return reflect.ValueOf(h).Pointer() }
