package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/a7d3e0dd/ratelimit/cost"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// Guard is the framework-neutral rate-limit check of an HTTP request: skip, key, cost, the
// store call under its deadline, the fail mode, the shaping wait, and the response to write.
// [Middleware] and every framework adapter call it, so they all behave alike:
//
//	o := g.Check(req)
//	o.Write(w) // or o.Headers(set)
//	if !o.Proceed {
//		return // Write answered the refusal
//	}
//	next()
//	g.Done(&o, status)
//
// A Guard never panics on a request and never answers 500: a failing store fails open (or
// closed, see [Response.FailClosed]); a malformed request (a key that cannot be read, a negative cost)
// is answered 400.
//
// A Guard is safe for concurrent use.
type Guard struct {
	guardConfig // the options, as NewGuard checked them

	limiter  *Limiter                             // the policies of every request, unless choose picks others
	observer *Observer                            // the store's; nil: none
	choose   func(r Request, key string) *Limiter // WithResolver; nil: limiter
	pick     func(Request) *Guard                 // a Switch: the guard of each request
	clock    Clock
	local    bool        // the store answers without I/O: no deadline
	bounds   *timeouts   // the deadlines of store calls
	clientIP *ipResolver // the client IP of a request, through the trusted proxies
	log      logs        // the store's logger
	// fallbacks are the reasons of falling back to the client IP logged so far.
	fallbacks keyFallbacks

	// Responses that do not depend on the request.
	missing, badRequest, badCost, failed, gone, busy, forbidden response
}

// NewGuard returns a guard of the requests limited by l, configured by opts. It fails when an
// option is invalid, and the error names the option. [Middleware] and the adapters' New call
// it; call it yourself to get the error rather than their panic.
func NewGuard(l *Limiter, opts ...Option) (*Guard, error) {
	if l == nil {
		return nil, errors.New("ratelimit: NewGuard: the limiter is nil; make one with ratelimit.New")
	}
	c, l, err := newGuardConfig(l, opts)
	if err != nil {
		return nil, err
	}
	g := &Guard{
		guardConfig: *c, limiter: l, observer: observerOf(l.store), clock: clockOf(l.store), local: isLocal(l.store),
		clientIP: c.ip.resolver(), log: loggerOf(l.store), bounds: newTimeouts(c.timeout),
	}
	if g.observer != nil {
		observedGuards.Store(true)
	}
	g.errs = optionErrors{}
	g.clientIP.reportTo(g)
	if g.onError == nil {
		g.onError = (&errorLog{clock: g.clock, failOpen: g.failStatus == 0, log: g.log}).report
	}
	g.choose = g.chooser(g)
	g.prepareResponses()
	return g, nil
}

// Check decides about request r: whether it proceeds, and what to answer if not. See
// [Outcome]. It reports the request's result (observe.Result) to the store's [Observer], once:
// at once when it refuses the request, or when r does not carry outcomes between guards; for a
// request that proceeds and carries them (the core's and the adapters' requests do), when
// [Guard.Done] is called, or merged into the report of the next guard the request passes, so
// that a request checked by two guards is counted once (see [Request]).
func (g *Guard) Check(r Request) (o Outcome) {
	if g.pick != nil {
		g.dispatch(r, &o)
		return o
	}
	g.check(r, &o)
	g.answer(r, &o, observe.RequestEvent{Result: o.Result, Waited: o.event.Waited})
	return o
}

// check decides about r in o, and sets o.Result.
func (g *Guard) check(r Request, o *Outcome) {
	res := g.ipOf(r)
	defer func() { o.ip = res.passed() }() // for a guard inside (see ipOf)
	var found keyed                        // the key function's answer, when the access lists asked it
	if g.access != nil {                   // before Skip: a denied client is refused on every route
		v, list, err := g.access.verdict(g, r, res, &found)
		if err != nil {
			g.onError(r, err)
			g.refuse(o, g.badRequest, err)
			o.Result = observe.ResultRejected
			return
		}
		if v != accessNone {
			g.access.logFirst(g, r, res, v, list)
			if v == accessDenied {
				g.refuse(o, g.forbidden, nil)
			} else {
				o.Proceed = true
			}
			o.Result = accessResults[v]
			return
		}
	}
	if g.skip != nil && g.skip(r) {
		o.Proceed, o.Result = true, observe.ResultSkipped
		return
	}
	key, err := g.keyOf(r, res, found)
	if errors.Is(err, ErrNoKey) {
		g.refuse(o, g.missing, nil)
		o.Result = observe.ResultRejected
		return
	}
	if err != nil {
		g.onError(r, err)
		g.refuse(o, g.badRequest, err)
		o.Result = observe.ResultRejected
		return
	}
	units := int64(1)
	if g.cost != nil {
		units = g.cost(r)
	}
	if units < 0 {
		// A request error, not a store failure: failing open would let it through unlimited.
		err := &opError{opCost, ErrBadRequest, fmt.Errorf("the cost function returned %d; a cost cannot be negative", units)}
		g.onError(r, err)
		g.refuse(o, g.badCost, err)
		o.Result = observe.ResultRejected
		return
	}
	l := g.limiter
	if g.choose != nil {
		l = g.choose(r, key)
	}
	ctx, cancel := g.deadline(r.Context())
	if g.after != nil { // every limiter of the guard holds: NewGuard and the Resolver's fit check it
		err = reserveInto(ctx, l, key, units, &o.Decision)
	} else {
		err = l.checkInto(ctx, &o.Decision, key, units, true)
	}
	cancel()
	if err != nil {
		g.storeFailed(o, r, err)
		return
	}
	if g.failedClosed(o, r, l, key, true) {
		return
	}
	if !o.Decision.Allowed && g.slotWait > 0 && waitsForSlots(&o.Decision) {
		reported := o.Decision.Source == observe.SourceFallback
		began := g.clock.Now()
		err := g.waitForSlot(r, l, key, units, &o.Decision)
		waited := g.clock.Now().Sub(began)
		o.event.Waited = waited
		if err != nil {
			*o = Outcome{} // the denial it waited on decides nothing now
			o.event.Waited = waited
			if r.Context().Err() == nil {
				g.storeFailed(o, r, err)
			} else {
				g.refuse(o, g.gone, err)
				o.Result = observe.ResultCanceled
			}
			return
		}
		if g.failedClosed(o, r, l, key, !reported) { // the store failed during the wait
			return
		}
	}
	fallback := o.Decision.Source == observe.SourceFallback
	g.describe(o, l)
	if !o.Decision.Allowed {
		g.denied(r, o)
		o.Result = observe.ResultDenied
		if fallback {
			o.Result = observe.ResultFallbackDenied
		}
		return
	}
	o.Proceed, o.Result = true, observe.ResultAllowed
	if fallback {
		o.Result = observe.ResultFallbackAllowed
	}
	if g.countIf != nil || g.after != nil || o.Decision.holds() {
		o.Pending, o.req, o.key, o.guard, o.limiter = true, r, key, g, l
	}
	if g.after != nil {
		o.Meter = new(cost.Meter)
	}
	if o.Decision.holds() {
		o.slots = g.hold(r, l, key, &o.Decision)
	}
	if d := o.Decision.Delay; d > 0 {
		if g.observer != nil {
			g.observer.queued(true)
		}
		began := g.clock.Now()
		err := g.clock.Sleep(r.Context(), d)
		o.event.Waited += g.clock.Now().Sub(began)
		if g.observer != nil {
			g.observer.queued(false)
		}
		if err != nil { // the client left before its turn: nothing was served
			g.abandon(o, r, l, key)
			waited := o.event.Waited
			*o = Outcome{}
			o.event.Waited = waited
			g.refuse(o, g.gone, &opError{opWait, nil, err})
			o.Result = observe.ResultCanceled
		}
	}
}

// reserveInto is l.Reserve of key at an estimate of units, into d. A function of its own,
// never inlined, so that the Decision that Reserve returns takes room on the stack only on
// the way to a reservation: every check runs Guard.check, often on a goroutine of its own
// (a gRPC call's, an HTTP/2 stream's), whose stack grows, a copy at each doubling, when the
// frames it runs through are large.
//
//go:noinline
func reserveInto(ctx context.Context, l *Limiter, key string, units int64, d *Decision) (err error) {
	*d, err = l.Reserve(ctx, key, units)
	return err
}

// abandon gives back everything an admitted request took when its client leaves before the
// handler runs (during its shaping wait): the renewals of its slots stop, and its charge and
// slots are refunded. (Dropped, the slots were renewed for as long as the process ran.)
func (g *Guard) abandon(o *Outcome, r Request, l *Limiter, key string) {
	d := o.Decision
	if o.slots != nil {
		d = o.slots.stop()
		o.slots = nil
	}
	ctx, cancel := g.deadline(context.WithoutCancel(r.Context()))
	defer cancel()
	if err := l.Settle(ctx, key, d, 0); err != nil {
		g.onError(r, g.timedOut(err))
	}
}

// failedClosed handles a decision of the local fallback, made because the store was
// unavailable: it is reported to the error handler (unless report is false: the request's
// fallback was reported already), and a guard that fails closed refuses it (the fallback does
// not open the route), giving back what the fallback charged for it. It reports whether it
// refused.
func (g *Guard) failedClosed(o *Outcome, r Request, l *Limiter, key string, report bool) bool {
	return o.Decision.Source == observe.SourceFallback && g.fallbackDecided(o, r, l, key, report)
}

// fallbackDecided is failedClosed of a decision of the local fallback: a function of its own,
// so that the Decision it settles takes room on the stack only then (see reserveInto).
func (g *Guard) fallbackDecided(o *Outcome, r Request, l *Limiter, key string, report bool) bool {
	cause := fallbackError(l.store)
	if report {
		g.onError(r, cause)
	}
	if g.failStatus == 0 {
		return false
	}
	if o.Decision.Allowed { // charged, and perhaps holding slots, on the fallback: given back
		ctx, cancel := g.deadline(context.WithoutCancel(r.Context()))
		_ = l.Settle(ctx, key, o.Decision, 0) // local: a memory store does not fail
		cancel()
	}
	o.Decision = Decision{}
	g.refuse(o, g.failed, cause)
	o.retry, o.Result = 1, observe.ResultErrorDenied
	return true
}

// fallbackError returns the error a guard reports for a decision of the local fallback: the
// store's failure on which it decided, of that failure's kind, or errFallback when the store
// does not tell it.
func fallbackError(s Store) error {
	if c, ok := capability[fallbackCauser](s); ok {
		if err := c.fallbackCause(); err != nil {
			return err
		}
	}
	return errFallback
}

// errFallback reports a decision of the local fallback, when the store does not tell why.
var errFallback = &opError{opFallback, kindUnavailable, errors.New("the store failed")}

// keyOf returns the key of r: the key function's, or the client IP when it finds none (unless
// the guard rejects such requests, then ErrNoKey). A key that cannot be used is an error of
// kind ErrBadRequest.
// found is what the key function answered already, if it was asked (found.done); res reads
// the client IP (see ipOf).
func (g *Guard) keyOf(r Request, res *ipResolver, found keyed) (string, error) {
	key, err := found.key, found.err
	if g.key != nil {
		if !found.done {
			key, err = g.key(keyRequest(r, res))
		}
		if errors.Is(err, ErrNoKey) && (g.missingStatus != 0) {
			return "", ErrNoKey
		}
		if errors.Is(err, ErrNoKey) {
			g.fellBack(r, err)
		}
	}
	if g.key == nil || errors.Is(err, ErrNoKey) {
		key, err = res.key(r)
	}
	switch {
	case err != nil:
	case key == "":
		err = errors.New("the key function returned an empty key")
	case len(key) > maxKeyBytes:
		err = fmt.Errorf("the key is %d bytes, more than %d", len(key), maxKeyBytes)
	default:
		return key, nil
	}
	return "", &opError{opKey, ErrBadRequest, err}
}

// keyRequest returns r as a guard's key function sees it: with the guard's client-IP resolver
// res, for KeyByIP. The resolver KeyByIP uses outside a guard (the connection's peer) hands r
// over as it is, which saves allocating the wrapper.
func keyRequest(r Request, res *ipResolver) Request {
	if res == peerOnly {
		return r
	}
	return &guardRequest{r, res}
}

// ipOf returns the client-IP resolver of r for g: its own; or, for a guard given no client-IP
// option, the one of the guard the request passed before it (the middleware around every
// route, for a route's own guard: README's login limit), so that a route's guard reads the
// client's address through the same trusted proxies, not the load balancer's as every
// client's.
func (g *Guard) ipOf(r Request) *ipResolver {
	if g.clientIP != peerOnly {
		return g.clientIP
	}
	if outer := outerOf(r); outer != nil && outer.ip != nil {
		return outer.ip
	}
	return peerOnly
}

// Done completes a request the guard let through, given the status its handler answered: it
// gives back the request's in-flight slots, and with [CountIf] refunds its charge when the
// status does not count, and tells the observer of a request whose report waited for it (see
// [Guard.Check]). Call it when the handler has returned — also when it panicked (a deferred
// call; say 500), so that no slot waits for its lifetime to end. A second call does nothing.
func (g *Guard) Done(o *Outcome, status int) {
	o.tell()
	if !o.Pending {
		return
	}
	if o.guard != g { // a Switch's outcome: the guard it chose completes it
		o.guard.Done(o, status)
		return
	}
	o.Pending = false
	d := o.Decision
	if o.slots != nil {
		d = o.slots.stop()
		o.slots = nil
	}
	refund := g.countIf != nil && !g.countIf(status)
	if !refund && !d.holds() && g.after == nil {
		return
	}
	// The client may be gone, but the request was served: settle it all the same.
	ctx, cancel := g.deadline(context.WithoutCancel(o.req.Context()))
	defer cancel()
	charge := d.Cost
	switch {
	case refund:
		charge = 0
	case g.after != nil:
		charge = g.charged(o, status)
	}
	if err := o.limiter.Settle(ctx, o.key, d, charge); err != nil {
		g.onError(o.req, g.timedOut(err))
	}
}

// charged returns what the request of o cost, given the status its client got, as the
// ChargeAfter function makes it of what the request's meter counted: its estimate when the
// function returns a negative cost (reported: the function is at fault, not the client).
func (g *Guard) charged(o *Outcome, status int) int64 {
	estimate := o.Decision.Cost
	n := g.after(o.Meter.After(status, estimate))
	if n < 0 {
		g.onError(o.req, &opError{opCost, ErrBadRequest, fmt.Errorf("the ChargeAfter function returned %d; a cost cannot be negative, so the estimate %d stays charged", n, estimate)})
		return estimate
	}
	return n
}

// DoneLater is [Guard.Done] for a response still being sent when its handler returns (a
// Fiber body stream, which fasthttp writes afterwards): it returns the completion, to call
// once with the status when the response has been sent or abandoned, and nil when nothing is
// pending. It keeps of the request what the completion may need, now, for a framework may
// recycle its request when the handler returns: an error the completion reports reaches the
// error handler with a request that has the method, path, route, client address and the
// context's values (copied: a framework may reuse the bytes), but no headers.
func (g *Guard) DoneLater(o *Outcome) func(status int) {
	o.tell()
	if !o.Pending {
		return nil
	}
	if o.guard != g { // a Switch's outcome: the guard it chose completes it
		return o.guard.DoneLater(o)
	}
	later := *o
	later.req = keptRequest{ctx: context.WithoutCancel(o.req.Context()), method: strings.Clone(o.req.Method()),
		path: strings.Clone(o.req.Path()), route: strings.Clone(o.req.Route()), remote: strings.Clone(o.req.RemoteAddr())}
	if later.slots != nil { // renewed while the response is sent, on what is kept of the request
		later.slots.keep(later.req)
	}
	o.Pending = false
	return func(status int) { g.Done(&later, status) }
}

// keptRequest is what DoneLater keeps of a request: no headers, no values but its context's.
type keptRequest struct {
	ctx                         context.Context
	method, path, route, remote string
}

func (k keptRequest) Context() context.Context { return k.ctx }
func (k keptRequest) Method() string           { return k.method }
func (k keptRequest) Path() string             { return k.path }
func (k keptRequest) Route() string            { return k.route }
func (k keptRequest) Header(string) string     { return "" }
func (k keptRequest) RemoteAddr() string       { return k.remote }
func (k keptRequest) Value(key any) any        { return k.ctx.Value(key) }

// deadline bounds a store call: by the guard's timeout (see [timeouts]), unless the store
// answers without I/O.
func (g *Guard) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if g.local {
		return ctx, noCancel
	}
	return g.bounds.bound(ctx)
}

// timedOut says so when err is the guard's deadline.
func (g *Guard) timedOut(err error) error {
	if errors.Is(err, kindTimeout) {
		return fmt.Errorf("%w (the guard's timeout is %v)", err, g.timeout)
	}
	return err
}

// storeFailed fills in the outcome of a failed store call: the request's client went away,
// or the store failed and the fail mode decides.
func (g *Guard) storeFailed(o *Outcome, r Request, err error) {
	if r.Context().Err() != nil {
		g.refuse(o, g.gone, err)
		o.Result = observe.ResultCanceled
		return
	}
	err = g.timedOut(err)
	g.onError(r, err)
	if g.failStatus == 0 {
		o.Proceed, o.Err, o.Result = true, err, observe.ResultUnlimited
		return
	}
	g.refuse(o, g.failed, err)
	o.retry, o.Result = 1, observe.ResultErrorDenied
}

// refuse fills in a refusal that has no decision.
func (g *Guard) refuse(o *Outcome, resp response, err error) {
	o.Status, o.ContentType, o.Body, o.Err = resp.status, resp.contentType, resp.body, err
}
