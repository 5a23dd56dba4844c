// Package echov5limit rate-limits Echo v5 routes with [github.com/a7d3e0dd/ratelimit]: the same
// checks, headers and responses as [ratelimit.Middleware], as Echo middleware. (Echo v4 has its
// own adapter, github.com/a7d3e0dd/ratelimit/adapters/echo.)
//
//	e.Use(echov5limit.New(limiter))
//
// Options are the core's ([ratelimit.Option]). A per-route limit is route middleware:
//
//	e.POST("/login", login, echov5limit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})))
//
// The handler reads the limiter's decision (remaining quota, binding policy) with [Decision]:
//
//	if d, ok := echov5limit.Decision(c); ok { c.Logger().Info("quota", "remaining", d.Remaining) }
//
// The middleware stores it with c.Set under the key "github.com/a7d3e0dd/ratelimit/adapters/echov5.decision";
// leave that key alone. A per-route limit's decision replaces the server's.
//
// Key functions see the values of c.Set as [ratelimit.Request.Value] (for
// [ratelimit.KeyByUser]), and Echo's matched route ([echo.Context.Path]) as
// [ratelimit.Request.Route]: the pattern of the route the router chose, also for a
// RouteNotFound route (a group middleware's catch-all, "/api/*") and for a path whose route
// lacks the request's method (405); "" when no route matched (Echo answers 404), so that
// [ratelimit.KeyByRoute] gives unknown paths no quotas of their own. They resolve the client IP
// with the core's rules ([ratelimit.KeyByIP]), not Echo's RealIP or IPExtractor.
package echov5limit

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
)

// decisionKey is the c.Set key of the decision the middleware hands its handler, and
// outcomeKey that of its outcome, which a guard after it takes the report of (see
// [ratelimit.Request]): a request through two guards is counted once.
const (
	decisionKey = "github.com/a7d3e0dd/ratelimit/adapters/echov5.decision"
	outcomeKey  = "github.com/a7d3e0dd/ratelimit/adapters/echov5.outcome"
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
// answered by the server's HTTPErrorHandler (as Echo's RequestLogger with HandleError does)
// before its status is counted, and is still returned.
func FromGuard(g *ratelimit.Guard) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
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
			if !o.Pending {
				return next(c)
			}
			if o.Meter != nil { // ChargeAfter: the handler reports its cost through its request's context
				c.SetRequest(c.Request().WithContext(cost.NewContext(c.Request().Context(), o.Meter)))
			}
			// A writer in front of Echo's Response may pass the status on to it only after the
			// route's handler and middleware return (Echo's HEAD for a GET route, with
			// RouterConfig.AutoHandleHEAD): then the status is recorded on its way in.
			w := c.Response()
			var rec *statusRecorder
			if _, ok := w.(*echo.Response); !ok {
				rec = &statusRecorder{ResponseWriter: w}
				c.SetResponse(rec)
			}
			// A handler that takes the connection over (a WebSocket upgrade) answers on it
			// itself: its status is 101, which the Response, never written to, does not say.
			resp, _ := w.(*echo.Response)
			var hw *hijackWriter
			if resp != nil {
				hw = &hijackWriter{ResponseWriter: resp.ResponseWriter, response: resp}
				resp.ResponseWriter = hw
			}
			defer func() {
				if hw != nil {
					resp.ResponseWriter = hw.ResponseWriter
				}
				if rec != nil {
					c.SetResponse(w)
				}
			}()
			err := next(c)
			if hw != nil && hw.hijacked { // nothing to answer on a connection taken over
				g.Done(o, http.StatusSwitchingProtocols)
				return err
			}
			unanswered := err
			if err != nil {
				if e := c.Echo(); e != nil && e.HTTPErrorHandler != nil {
					e.HTTPErrorHandler(c, err)
					unanswered = nil
				}
			}
			if r, uerr := echo.UnwrapResponse(c.Response()); uerr == nil && o.Meter != nil {
				o.Meter.Wrote(r.Size)
			}
			g.Done(o, status(c, rec, unanswered))
			return err
		}
	}
}

// status returns the status of the response to c: the one written (as rec recorded it, else
// as Echo's Response has it), else the one an error handler would write for err, an error no
// error handler has answered (a Context without its Echo), else 200. An interim status (1xx
// but 101) that Echo's Response kept, having refused every later one, was followed on the wire
// by the 200 net/http sends with the body.
func status(c *echo.Context, rec *statusRecorder, err error) int {
	if rec != nil && rec.status != 0 {
		return rec.status
	}
	_, s := echo.ResolveResponseStatus(c.Response(), err)
	if s < http.StatusOK && s != http.StatusSwitchingProtocols {
		return http.StatusOK
	}
	return s
}

// statusRecorder records the first final status written through it: 1xx are interim
// responses, which net/http sends before the final one (as the core's middleware records). It
// unwraps to the writer it wraps, for [echo.UnwrapResponse] and [http.ResponseController].
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush and Hijack serve handlers that assert http.Flusher or http.Hijacker, as Echo's
// Response does.
func (w *statusRecorder) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 { // the handler answers on the connection: 101, as the core says
		w.status = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

// panicked completes the outcome of a handler that panicked, as a 500 when it had answered
// nothing, else with the status its client got (its client left mid-stream, so that
// httputil.ReverseProxy panics with http.ErrAbortHandler; a cleanup failed after the answer):
// it was served as far as it got. It passes the panic on.
// After Done, it does nothing (but tell a report that waits for no status).
func panicked(g *ratelimit.Guard, o *ratelimit.Outcome, c *echo.Context) {
	if !o.Pending {
		g.Done(o, http.StatusInternalServerError)
		return
	}
	v := recover()
	s := http.StatusInternalServerError
	if r, err := echo.UnwrapResponse(c.Response()); err == nil && r.Committed { // it had answered: its client got that status
		s = r.Status
		if o.Meter != nil {
			o.Meter.Wrote(r.Size)
		}
	}
	g.Done(o, s)
	if v != nil {
		panic(v)
	}
}

// hijackWriter records that a handler took the connection over before answering, standing in
// front of the writer of Echo's Response for a request whose guard waits for its status
// (CountIf, in-flight slots): the guard is then told 101 Switching Protocols, as
// ratelimit.Middleware tells it.
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

// FlushError flushes the writer, for [http.ResponseController].
func (w *hijackWriter) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the writer in front of which w stands, for [http.ResponseController].
func (w *hijackWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Decision returns the decision the middleware made for the request of c: the remaining quota,
// the binding policy, every policy's result. It reports false when no limiter decided (the
// request was skipped, or the store failed and the request failed open).
func Decision(c *echo.Context) (ratelimit.Decision, bool) {
	if d, ok := c.Get(decisionKey).(*ratelimit.Decision); ok {
		return *d, true
	}
	return ratelimit.Decision{}, false
}

// request is an Echo request seen as a [ratelimit.Request]. It holds one pointer, so
// converting it to the interface does not allocate.
type request struct{ c *echo.Context }

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

// Route returns the matched route's pattern, or "" when no route matched. Echo v5's router
// sets [echo.Context.Path] to "" for a request it matched to nothing (where Echo before v4.10.1
// left the raw path), and to the pattern of the route it chose otherwise: a RouteNotFound
// route's, or for a 405 that of the route the path matched.
func (r request) Route() string { return r.c.Path() }
