// Package ginlimit rate-limits Gin routes with [github.com/a7d3e0dd/ratelimit]: the same
// checks, headers and responses as [ratelimit.Middleware], as Gin middleware.
//
//	r.Use(ginlimit.New(limiter))
//
// Options are the core's ([ratelimit.Option]). A per-route limit is a handler of its route or
// group:
//
//	r.POST("/login", ginlimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})), login)
//
// The handler reads the limiter's decision (remaining quota, binding policy) with [Decision]:
//
//	if d, ok := ginlimit.Decision(c); ok { log.Printf("%d left", d.Remaining) }
//
// The middleware stores it with c.Set under the key "github.com/a7d3e0dd/ratelimit/adapters/gin.decision",
// and its outcome under ".../gin.outcome"; leave those keys alone. A per-route limit's decision replaces the router's.
//
// Key functions see Gin's matched route ([gin.Context.FullPath]) as [ratelimit.Request.Route],
// the values of c.Set as [ratelimit.Request.Value] (for [ratelimit.KeyByUser]), and resolve
// the client IP with the core's rules ([ratelimit.KeyByIP]), not Gin's ClientIP.
package ginlimit

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
)

// decisionKey is the c.Set key of the decision the middleware hands its handler, and
// outcomeKey that of its outcome, which a guard after it takes the report of (see
// [ratelimit.Request]): a request through two guards is counted once.
const (
	decisionKey = "github.com/a7d3e0dd/ratelimit/adapters/gin.decision"
	outcomeKey  = "github.com/a7d3e0dd/ratelimit/adapters/gin.outcome"
)

// New returns Gin middleware that limits requests with l, configured by opts. It panics if an
// option is invalid, when the router is being set up; [FromGuard] with [ratelimit.NewGuard]
// returns the error instead. It never panics on a request.
func New(l *ratelimit.Limiter, opts ...ratelimit.Option) gin.HandlerFunc {
	g, err := ratelimit.NewGuard(l, opts...)
	if err != nil {
		panic(err)
	}
	return FromGuard(g)
}

// FromGuard returns Gin middleware that limits requests with g. A refused request is
// answered and aborted ([gin.Context.Abort]): no later handler runs.
func FromGuard(g *ratelimit.Guard) gin.HandlerFunc {
	return func(c *gin.Context) {
		checked := g.Check(request{c})
		checked.Write(c.Writer)
		if !checked.Proceed {
			c.Abort()
			return
		}
		// The outcome goes to the heap only for a request that proceeds (a refusal allocates
		// none): a guard after this one takes its report through it (see OuterOutcome).
		o := new(ratelimit.Outcome)
		*o = checked
		c.Set(outcomeKey, o)
		if o.Decision.Limit > 0 { // the limiter decided: not skipped, not failed open
			c.Set(decisionKey, &o.Decision)
		}
		// A handler that panicked: the request's slots come back and its report is told all
		// the same. (After the Done below, this one does nothing.)
		defer panicked(g, o, c)
		if o.Meter != nil { // ChargeAfter: the handler reports its cost through its request's context
			c.Request = c.Request.WithContext(cost.NewContext(c.Request.Context(), o.Meter))
		}
		var hw *hijackWriter
		if o.Pending {
			hw = &hijackWriter{ResponseWriter: c.Writer}
			c.Writer = hw
		}
		c.Next()
		s := c.Writer.Status()
		if hw != nil && hw.hijacked {
			s = http.StatusSwitchingProtocols
		}
		if o.Meter != nil {
			o.Meter.Wrote(int64(c.Writer.Size())) // -1, nothing written, counts nothing
		}
		g.Done(o, status(s))
	}
}

// panicked completes the outcome of a handler that panicked, as a 500 when it had answered
// nothing, else with the status its client got (its client left mid-stream, so that
// httputil.ReverseProxy panics with http.ErrAbortHandler; a cleanup failed after the answer):
// it was served as far as it got. It passes the panic on.
// After Done, it does nothing.
func panicked(g *ratelimit.Guard, o *ratelimit.Outcome, c *gin.Context) {
	if !o.Pending {
		g.Done(o, http.StatusInternalServerError) // tells a report that waits for no status
		return
	}
	v := recover()
	s := http.StatusInternalServerError
	if c.Writer.Written() { // it had answered: its client got that status
		s = status(c.Writer.Status())
		if o.Meter != nil {
			o.Meter.Wrote(int64(c.Writer.Size()))
		}
	}
	g.Done(o, s)
	if v != nil {
		panic(v)
	}
}

// hijackWriter records that a handler took the connection over before answering (a WebSocket
// upgrade), so that the guard is told 101 Switching Protocols, as ratelimit.Middleware tells
// it: Gin's writer, never written to, says 200. Only a request whose guard waits for its
// status (CountIf, in-flight slots) has one.
type hijackWriter struct {
	gin.ResponseWriter
	hijacked bool
}

// Hijack implements [http.Hijacker].
func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	written := w.ResponseWriter.Written()
	conn, rw, err := w.ResponseWriter.Hijack()
	if err == nil && !written {
		w.hijacked = true
	}
	return conn, rw, err
}

// status returns the status the client got when Gin's writer holds s: an interim status (1xx
// but 101) sent with WriteHeaderNow, after which Gin refuses every later one, was followed on
// the wire by the 200 net/http sends with the body.
func status(s int) int {
	if s < http.StatusOK && s != http.StatusSwitchingProtocols {
		return http.StatusOK
	}
	return s
}

// Decision returns the decision the middleware made for the request of c: the remaining quota,
// the binding policy, every policy's result. It reports false when no limiter decided (the
// request was skipped, or the store failed and the request failed open).
func Decision(c *gin.Context) (ratelimit.Decision, bool) {
	if v, ok := c.Get(decisionKey); ok {
		if d, ok := v.(*ratelimit.Decision); ok {
			return *d, true
		}
	}
	return ratelimit.Decision{}, false
}

// request is a Gin request seen as a [ratelimit.Request]. A struct of one pointer converts to
// an interface without allocating.
type request struct{ c *gin.Context }

func (r request) Context() context.Context  { return r.c.Request.Context() }
func (r request) Method() string            { return r.c.Request.Method }
func (r request) Path() string              { return r.c.Request.URL.Path }
func (r request) Route() string             { return r.c.FullPath() }
func (r request) RemoteAddr() string        { return r.c.Request.RemoteAddr }
func (r request) Header(name string) string { return header(r.c.Request, name) }

// OuterOutcome returns the outcome of the guard before this one on the request, if any (see
// [ratelimit.Request]).
func (r request) OuterOutcome() *ratelimit.Outcome {
	v, _ := r.c.Get(outcomeKey)
	o, _ := v.(*ratelimit.Outcome)
	return o
}

// Value returns what c.Set stored under a string key, else the request context's value.
func (r request) Value(key any) any {
	if k, ok := key.(string); ok {
		if v, ok := r.c.Get(k); ok {
			return v
		}
	}
	return r.c.Request.Context().Value(key)
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
