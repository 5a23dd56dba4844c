package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Guard is the framework-neutral rate-limit check of an HTTP request: skip, key, cost, the
// store call under its deadline, the fail mode, the shaping wait, and the response to write.
// [Middleware] and every framework adapter call it, so they all behave alike:
//
//	o := g.Check(req)
//	o.Headers(setHeader)
//	if !o.Proceed {
//		respond(o.Status, o.ContentType, o.Body)
//		return
//	}
//	next()
//	g.Done(&o, status)
//
// A Guard never panics on a request and never answers 500: a failing store fails open (or
// closed, see [FailClosed]), a malformed request (a key that cannot be read, a negative cost)
// is answered 400.
//
// A Guard is safe for concurrent use.
type Guard struct {
	limiter      *Limiter
	names        []string // display name of each policy of limiter
	policyHeader string   // RateLimit-Policy

	key      KeyFunc
	fallback KeyFunc // used when key finds no key ([WithFallbackKey]); nil to refuse with missing
	cost     func(Request) int64
	skip     func(Request) bool
	countIf  func(int) bool
	deny     func(Request, Decision) (int, string, []byte)
	onError  func(Request, error)
	now      func() time.Time
	wait     func(context.Context, time.Duration) error
	headers  HeaderStyle
	problem  bool
	timeout  time.Duration
	local    bool // the store answers without I/O: no deadline, no goroutine
	direct   bool // the store gives up at its context's deadline: no goroutine

	failStatus int
	// Responses that do not depend on the request.
	missing, badRequest, badCost, failed, gone response
}

// NewGuard returns a guard of the requests limited by l, configured by opts. It fails when
// an option is invalid, and the error names the option.
func NewGuard(l *Limiter, opts ...Option) (*Guard, error) {
	if l == nil {
		return nil, errors.New("ratelimit: NewGuard: the limiter is nil; make one with ratelimit.New")
	}
	c := config{headers: HeadersXRateLimit, timeout: DefaultTimeout}
	for i, o := range opts {
		if o == nil {
			c.errorf("option %d is nil", i+1)
			continue
		}
		o(&c)
	}
	l, err := c.limiter(l)
	if err != nil {
		return nil, err
	}

	g := &Guard{
		limiter: l, key: c.key, cost: c.cost, skip: c.skip, countIf: c.countIf, deny: c.deny,
		onError: c.onError, now: c.now, wait: c.wait, headers: c.headers, problem: c.problem,
		timeout: c.timeout, failStatus: c.failStatus, fallback: c.fallback,
	}
	_, g.local = l.store.(*MemoryStore)
	if rs, ok := l.store.(*RedisStore); ok {
		g.direct = rs.deadlines
	}
	g.names = make([]string, len(l.policies))
	for i, p := range l.policies {
		g.names[i] = p.DisplayName()
	}
	g.policyHeader = policyHeader(l.policies, g.names)
	if g.key == nil {
		g.key = KeyByIP()
	}
	if c.missingStatus == 0 && g.fallback == nil {
		g.fallback = KeyByIP()
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.wait == nil {
		g.wait = sleep
	}
	if g.onError == nil {
		g.onError = (&errorLog{failOpen: c.failStatus == 0}).report
	}
	g.prepareResponses(&c)
	return g, nil
}

// limiter returns the limiter a guard of l checks, or every error of the configuration.
func (c *config) limiter(l *Limiter) (*Limiter, error) {
	if c.policies != nil {
		pl, err := l.WithPolicies(c.policies...)
		if err != nil {
			c.errs = append(c.errs, &opError{"WithPolicies", err})
		} else {
			l = pl
		}
	}
	if c.fallback != nil && c.missingStatus != 0 {
		c.errorf("WithFallbackKey cannot be combined with RejectMissingKey(%d): a request without a key is either limited by the fallback key or refused; choose one", c.missingStatus)
	}
	if c.countIf != nil {
		for _, p := range l.policies {
			if p.algorithm().Name() == "leaky_bucket_shaping" {
				c.errorf("CountIf cannot be combined with the shaping policy %q: a shaped request's slot is reserved before it runs", p.DisplayName())
			}
		}
	}
	if len(c.errs) == 0 {
		return l, nil
	}
	for i, err := range c.errs {
		if _, ok := err.(*opError); !ok {
			c.errs[i] = &opError{"", err}
		}
	}
	return nil, errors.Join(c.errs...)
}

// prepareResponses builds the refusals that do not depend on the request.
func (g *Guard) prepareResponses(c *config) {
	if c.missingStatus != 0 {
		g.missing = refusal(c.missingStatus, "the request does not identify its client.", c.problem)
	}
	g.badRequest = refusal(http.StatusBadRequest, "the request's client could not be identified.", c.problem)
	g.badCost = refusal(http.StatusBadRequest, "the request's cost is invalid.", c.problem)
	g.gone = refusal(statusClientClosed, "the request was cancelled.", c.problem)
	if c.failStatus != 0 {
		detail := "the service is temporarily unavailable. Retry in 1 second."
		if c.failStatus == http.StatusTooManyRequests {
			detail = "Retry in 1 second."
		}
		g.failed = refusal(c.failStatus, detail, c.problem)
	}
}

// Limiter returns the limiter the guard checks: the one it was given, or the one
// [WithPolicies] made over its store.
func (g *Guard) Limiter() *Limiter { return g.limiter }

// Check decides about request r: whether it proceeds, and what to answer if not. See
// [Outcome].
func (g *Guard) Check(r Request) (o Outcome) {
	if g.skip != nil && g.skip(r) {
		o.Proceed = true
		return o
	}
	key, err := g.key(r)
	if err != nil && errors.Is(err, ErrNoKey) {
		if g.fallback == nil {
			g.refuse(&o, g.missing, nil)
			return o
		}
		key, err = g.fallback(r)
		if errors.Is(err, ErrNoKey) {
			err = fmt.Errorf("neither the key function nor the fallback key function found a key: %w", err)
		}
	}
	if err == nil && key == "" {
		err = errors.New("the key function returned an empty key")
	} else if err == nil && len(key) > MaxKeyBytes {
		err = fmt.Errorf("%w: the key is %d bytes, more than %d", ErrKeyTooLong, len(key), MaxKeyBytes)
	}
	if err != nil {
		err = &opError{"key", err}
		g.onError(r, err)
		g.refuse(&o, g.badRequest, err)
		return o
	}

	cost := int64(1)
	if g.cost != nil {
		cost = g.cost(r)
	}
	if cost < 0 {
		// A request error, not a store failure: failing open would let it through unlimited.
		err := &opError{"cost", fmt.Errorf("the cost function returned %d; a cost cannot be negative", cost)}
		g.onError(r, err)
		g.refuse(&o, g.badCost, err)
		return o
	}
	if err := g.call(r.Context(), key, cost, true, &o.Decision); err != nil {
		g.storeFailed(&o, r, err)
		return o
	}
	g.describe(&o)
	if !o.Decision.Allowed {
		g.denied(r, &o)
		return o
	}
	o.Proceed = true
	if g.countIf != nil {
		o.pending, o.req, o.key = true, r, key
	}
	if d := o.Decision.Delay; d > 0 {
		if err := g.wait(r.Context(), d); err != nil {
			o = Outcome{}
			g.refuse(&o, g.gone, &opError{"shaping wait", err})
		}
	}
	return o
}

// Done completes a request the guard let through, given the status its handler answered.
// With [CountIf], it refunds the request's charge when the status does not count; otherwise
// it does nothing. Call it once per outcome, after the handler.
func (g *Guard) Done(o *Outcome, status int) {
	if !o.pending {
		return
	}
	o.pending = false
	if g.countIf(status) {
		return
	}
	// The client may be gone, but the request was served: refund it all the same.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(o.req.Context()), g.timeout)
	defer cancel()
	var err error
	key, d := o.key, o.Decision
	if g.local || g.direct {
		err = g.limiter.Refund(ctx, key, d)
	} else {
		done := make(chan error, 1)
		go func() { done <- g.limiter.Refund(ctx, key, d) }()
		select {
		case err = <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		g.onError(o.req, g.storeError(err, "store, refunding after the handler"))
	}
}

// call runs the check under the guard's deadline and writes the decision to d. Not every
// store client gives up at its context's deadline (go-redis, unless ContextTimeoutEnabled,
// waits for its ReadTimeout), so unless the store is known to, the call runs in a goroutine of
// its own and is abandoned at the deadline; it ends when the store answers, and its result is
// dropped.
func (g *Guard) call(ctx context.Context, key string, cost int64, charge bool, d *Decision) error {
	if g.local {
		var err error
		*d, err = g.limiter.check(ctx, key, cost, charge)
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	if g.direct {
		var err error
		*d, err = g.limiter.check(ctx, key, cost, charge)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err) // go-redis says "i/o timeout"
		}
		return err
	}
	c := &storeCall{done: make(chan struct{})}
	go c.run(ctx, g.limiter, key, cost, charge)
	select {
	case <-c.done:
	case <-ctx.Done():
		select {
		case <-c.done:
		default:
			return ctx.Err()
		}
	}
	if c.err == nil {
		*d = c.d
	}
	return c.err
}

// storeCall is one store call running in its own goroutine.
type storeCall struct {
	d    Decision
	err  error
	done chan struct{}
}

func (c *storeCall) run(ctx context.Context, l *Limiter, key string, cost int64, charge bool) {
	c.d, c.err = l.check(ctx, key, cost, charge)
	close(c.done)
}

// storeFailed fills in the outcome of a failed store call: the request's client went away,
// or the store failed and the fail mode decides.
func (g *Guard) storeFailed(o *Outcome, r Request, err error) {
	if r.Context().Err() != nil {
		g.refuse(o, g.gone, &opError{"store", err})
		return
	}
	err = g.storeError(err, "store")
	g.onError(r, err)
	if g.failStatus == 0 {
		o.Proceed, o.Err = true, err
		return
	}
	g.refuse(o, g.failed, err)
	o.retry = 1
}

// storeError wraps a store error, saying so when it was the guard's deadline.
func (g *Guard) storeError(err error, op string) error {
	if errors.Is(err, context.DeadlineExceeded) {
		op += " did not answer within " + g.timeout.String()
	}
	return &opError{op, err}
}

// refuse fills in a refusal that has no decision.
func (g *Guard) refuse(o *Outcome, resp response, err error) {
	o.Status, o.ContentType, o.Body, o.Err = resp.status, resp.contentType, resp.body, err
}

// describe fills in what the headers of a decided outcome need.
func (g *Guard) describe(o *Outcome) {
	d := &o.Decision
	if !d.Allowed {
		o.retry = retrySeconds(d.RetryAfter)
	}
	o.style = g.headers
	if g.headers&HeadersXRateLimit != 0 {
		o.resetAt = resetEpoch(g.now(), d.ResetAfter)
	}
	if g.headers&HeadersIETFDraft != 0 {
		o.resetIn = ceilSeconds(d.ResetAfter)
		o.binding = g.nameOf(&d.Policy)
		o.policies = g.policyHeader
	}
}

// denied fills in the response to a denied request.
func (g *Guard) denied(r Request, o *Outcome) {
	if g.deny == nil {
		o.Status = http.StatusTooManyRequests
		o.ContentType, o.Body = denyBody(&o.Decision, o.retry, g.nameOf, g.problem)
		return
	}
	o.Status, o.ContentType, o.Body = g.deny(r, o.Decision)
	if o.Status < 400 || o.Status > 599 {
		o.Status = http.StatusTooManyRequests
	}
}

// nameOf returns the display name of one of the limiter's policies, computed once.
func (g *Guard) nameOf(p *Policy) string {
	for i := range g.limiter.policies {
		if q := &g.limiter.policies[i]; q.compiled == p.compiled && p.compiled != nil {
			return g.names[i]
		}
	}
	return p.DisplayName()
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// opError is an error of the guard: what it was doing, and the cause.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "ratelimit: ")
	if e.op == "" {
		return "ratelimit: " + msg
	}
	return "ratelimit: " + e.op + ": " + msg
}

func (e *opError) Unwrap() error { return e.err }

// errorLog is the default error handler: it logs with log/slog, at most once a second.
type errorLog struct {
	failOpen bool
	last     atomic.Int64 // Unix second of the last log
	dropped  atomic.Int64 // errors not logged since
}

func (l *errorLog) report(r Request, err error) {
	now, last := time.Now().Unix(), l.last.Load()
	if now == last || !l.last.CompareAndSwap(last, now) {
		l.dropped.Add(1)
		return
	}
	slog.Default().LogAttrs(r.Context(), slog.LevelWarn, l.message(err),
		slog.String("error", err.Error()), slog.Int64("not_logged_since", l.dropped.Swap(0)))
}

// message says what the guard did about err.
func (l *errorLog) message(err error) string {
	var op *opError
	switch {
	case errors.As(err, &op) && op.op == "key":
		return "ratelimit: request answered 400: its key could not be read"
	case errors.As(err, &op) && op.op == "cost":
		return "ratelimit: request answered 400: its cost is negative"
	case errors.As(err, &op) && strings.Contains(op.op, "after the handler"):
		return "ratelimit: a request could not be refunded after its handler"
	case l.failOpen:
		return "ratelimit: the store failed; the request was let through (fail-open)"
	}
	return "ratelimit: the store failed; the request was refused (fail-closed)"
}
