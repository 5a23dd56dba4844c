package ratelimit

import (
	"bufio"
	"context"
	"net"
	"net/http"

	"github.com/a7d3e0dd/ratelimit/cost"
)

// Middleware returns net/http middleware that limits requests with l. Without options it keys
// requests by the connection's IP address ([KeyByIP]), checks every policy of l, writes the
// X-RateLimit headers on every limited response, and answers 429 Too Many Requests, with
// Retry-After, to a request any policy denies. The handler finds the decision with
// [DecisionFrom].
//
// Wrapping a whole mux is one line:
//
//	http.ListenAndServe(":8080", ratelimit.Middleware(l)(mux))
//
// and so is a per-route limit, with its own options:
//
//	mux.Handle("POST /login", ratelimit.Middleware(l,
//		ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute}),
//	)(loginHandler))
//
// Middleware panics if an option is invalid, when the server is being set up; [NewGuard] takes
// the same options and returns the error instead. It never panics on a request. See [Guard]
// for what happens to each request, and [Option] for the options.
func Middleware(l *Limiter, opts ...Option) func(http.Handler) http.Handler {
	g, err := NewGuard(l, opts...)
	if err != nil {
		panic(err)
	}
	return FromGuard(g)
}

// FromGuard returns net/http middleware that limits requests with g, as [Middleware] does with
// the guard it makes: use it with a guard made by [NewGuard] or [Switch], or one that a rules
// engine keeps up to date. The adapters of each framework have a FromGuard of their own.
//
// Middleware around a whole router knows each request's route all the same: when the handler
// it wraps can say which pattern matches a request — *http.ServeMux, or any router with its
// method Handler(*http.Request) (http.Handler, string) — a request that has no route yet
// gets the pattern the router matches for it, asked once and only when something reads it,
// so that [KeyByRoute] keys it by its route rather than falling back to its client IP:
//
//	http.ListenAndServe(":8080", ratelimit.Middleware(l,
//		ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute())))(mux))
//
// Wrap the router itself (other middleware outside), or it cannot be asked. A request the
// router only redirects to add a slash to its path has no route (see routeOf), nor has one it
// does not match. The adapters need none of this: their frameworks route before middleware runs.
func FromGuard(g *Guard) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		h := &limitHandler{g: g, next: next}
		h.routes, _ = next.(router)
		return h
	}
}

// limitHandler is the middleware around one handler.
type limitHandler struct {
	g      *Guard
	next   http.Handler
	routes router // next, when it can say a request's route before routing it
}

func (h *limitHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var o Outcome
	if h.routes != nil && r.Pattern == "" {
		o = h.g.Check(&routedRequest{httpRequest: httpRequest{r}, router: h.routes})
	} else {
		o = h.g.Check(httpRequest{r})
	}
	if !o.Proceed || o.Decision.n == 0 && o.report == 0 && o.ip == nil {
		// Refused, or let through without a decision (skipped, failed open), a report to carry
		// or a client-IP resolver for a guard inside: there is nothing to hand over, and Write
		// answers a refusal whole.
		o.Write(w)
		if o.Proceed {
			h.next.ServeHTTP(w, r)
		}
		return
	}
	a := &admitted{ctx: decisionContext{Context: r.Context(), o: o}}
	op := &a.ctx.o // the outcome the handler's context carries: a guard inside takes its report
	op.writeHeaders(w.Header(), a.vals[:], a.buf[:0])
	// WithContext is inlined and its copy of r does not escape, so the copy is made on the
	// stack and moved into a: the request the handler gets costs no allocation of its own
	// (TestMiddlewareAllocations would tell if a compiler stopped inlining it).
	a.req = *r.WithContext(&a.ctx)
	if !op.Pending {
		if op.report == 1 {
			defer op.tell() // when the handler returns (or panics), unless a guard inside took it
		}
		h.next.ServeHTTP(w, &a.req)
		return
	}
	sw := &statusWriter{ResponseWriter: w, meter: op.Meter}
	if op.Meter != nil { // ChargeAfter: the handler reports its cost through its context
		a.req = *a.req.WithContext(cost.NewContext(a.req.Context(), op.Meter))
	}
	defer h.panicked(op, sw) // its slots come back all the same
	h.next.ServeHTTP(sw, &a.req)
	h.g.Done(op, sw.statusCode())
}

// panicked completes the outcome of a handler that panicked, as a 500 when it had answered
// nothing, else with the status its client got (its client left mid-stream, so that
// httputil.ReverseProxy panics with http.ErrAbortHandler; a cleanup failed after the answer):
// it was served as far as it got. It passes the panic on. After Done, it does nothing.
func (h *limitHandler) panicked(o *Outcome, sw *statusWriter) {
	if !o.Pending {
		return
	}
	v := recover()
	status := http.StatusInternalServerError
	if sw.status != 0 { // it had answered: its client got that status
		status = sw.status
	}
	h.g.Done(o, status)
	if v != nil {
		panic(v)
	}
}

// admitted is what the middleware hands the handler of a request the limiter admitted (or
// whose report waits for its handler), in one allocation: the request, with the guard's
// outcome in its context, and the backing arrays of the response's rate-limit header values
// and of their bytes (as far as they fit). Each request has its own; nothing is reused, so
// nothing of one request reaches another. (The statusWriter of CountIf stays apart.)
type admitted struct {
	ctx  decisionContext
	req  http.Request
	vals [numFields]string
	buf  [admittedBytes]byte
}

// admittedBytes holds the numbers of the rate-limit headers of one policy, keeping admitted
// in its size class of 1,536 bytes (the outcome in its context, which carries the guard's
// report to a guard inside, took it past 1,280), with the 8 bytes of Go's malloc header
// (TestAdmittedSizeClass): 8 more took it to 1,792. It was 112 until Policy gained its
// Period pointer, 8 bytes in each of the decision's policies; 80 until the outcome gained the
// client-IP resolver it hands a guard inside (see Guard.ipOf).
const admittedBytes = 72

// decisionKey is the context key of the decision the middleware hands its handler.
type decisionKey struct{}

// outcomeKey is the context key of the outcome the middleware hands its handler, which a
// guard inside finds in its request's context (see Guard.answer).
type outcomeKey struct{}

// decisionContext is a request's context with its guard's outcome, and so its decision: one
// allocation for both, where context.WithValue and a copy would take two.
type decisionContext struct {
	context.Context
	o Outcome
}

func (c *decisionContext) Value(key any) any {
	switch key {
	case decisionKey{}:
		if c.o.Decision.n > 0 {
			return &c.o.Decision
		}
	case outcomeKey{}:
		return &c.o
	}
	return c.Context.Value(key) // a guard that did not decide leaves the decision of one before
}

// DecisionFrom returns the decision of the request whose context is ctx, as the net/http
// [Middleware] made it: the remaining quota, the binding policy, every policy's result. It
// reports false when the limiter did not decide (the request was skipped, or the store failed
// and the request failed open). The framework adapters hand the decision over through their
// own context: see their Decision functions.
func DecisionFrom(ctx context.Context) (Decision, bool) {
	d, ok := ctx.Value(decisionKey{}).(*Decision)
	if !ok {
		return Decision{}, false
	}
	return *d, true
}

// statusWriter records the status a handler answers, for CountIf, and with ChargeAfter counts
// the bytes of the body it writes. It passes Flush and Hijack through, and unwraps for
// http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status int
	meter  *cost.Meter // ChargeAfter's; nil: none
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 { // 1xx are interim responses
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	if w.meter != nil {
		w.meter.Wrote(int64(n))
	}
	return n, err
}

func (w *statusWriter) statusCode() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush implements http.Flusher when the wrapped writer can flush.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack implements http.Hijacker when the wrapped writer can hijack.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}
