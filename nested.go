package ratelimit

import (
	"sync/atomic"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// A request often passes through two guards: the middleware around every route, then a
// route's own (the login route of README's "Use it"). Each decides, but the client gets one
// response, and the observer is told of the request once, with the result that response was:
// a guard that lets a request through does not tell its observer at once, but leaves the
// report in its outcome;
// the next guard the request meets takes it over, merged with its own verdict, and the last
// one tells it, when it refuses the request or when its handler returns ([Guard.Done]).
//
// A guard finds the outcome of the one before through the request: a Request that carries it
// has the method
//
//	OuterOutcome() *Outcome
//
// returning the outcome of the last guard the request passed that let it through (nil for
// none), which its adapter keeps where the next guard's Request finds it (Gin and Echo: c.Set;
// Fiber: c.Locals; gRPC: the call's context). Where it has none, the guard looks in the
// request's context, where net/http's middleware keeps its outcome: so net/http middleware
// around a Gin or Echo engine hands its report over too. Such an
// adapter calls [Guard.Done] after the next handler returns, whether or not the outcome is
// Pending. A guard whose request does not carry outcomes (an adapter of your own without the
// method) tells its observer at once, as before: there, a request through two guards is
// counted by each.

// observedGuards is set once a guard with an observer is made: until then, a guard without one
// has no outer guard's observer to report to, and looks for none.
var observedGuards atomic.Bool

// outerOutcome is a Request that carries the outcome of the guard before (see above).
type outerOutcome interface {
	OuterOutcome() *Outcome
}

// outerOf returns the outcome of the guard r passed before this one, nil for none: the one r
// carries, or net/http's middleware's, in r's context.
func outerOf(r Request) *Outcome {
	if c, ok := r.(outerOutcome); ok {
		if o := c.OuterOutcome(); o != nil {
			return o
		}
	}
	o, _ := r.Context().Value(outcomeKey{}).(*Outcome)
	return o
}

// answer tells the guard's observer of the request o is the outcome of, with the event e: at
// once, or, when the request carries outcomes and proceeds, when the next guard or Done does.
// An outer guard's report, left in its outcome, is taken over and merged into e. A guard
// without an observer reports to the outer guard's, if there is one: that observer counts the
// request by what its client got, this guard's refusal included.
func (g *Guard) answer(r Request, o *Outcome, e observe.RequestEvent) {
	obs := g.observer
	if obs == nil && !observedGuards.Load() {
		return // no guard of the process has an observer: none to tell, none to look for
	}
	c, carries := r.(outerOutcome)
	if !carries {
		obs.answered(e)
		return
	}
	outer := c.OuterOutcome()
	if outer == nil { // net/http's middleware around the framework's engine, if any
		outer, _ = r.Context().Value(outcomeKey{}).(*Outcome)
	}
	if obs == nil {
		if outer == nil || outer.observer == nil {
			return // nobody to tell
		}
		obs = outer.observer
	}
	if outer != nil && sameObserver(outer.observer, obs) && outer.takeReport() {
		e = mergeEvents(outer.event, e)
	}
	if !o.Proceed {
		obs.answered(e)
		return
	}
	o.report, o.event, o.observer = 1, e, obs // o is not shared yet
}

// tell tells o's observer of its request, unless it was told or an inner guard took the
// report over.
func (o *Outcome) tell() {
	if o.takeReport() {
		o.observer.answered(o.event)
	}
}

// takeReport reports whether o's report was waiting, and takes it: once, of all the callers.
// A handler may serve requests of its own with its request's context on other goroutines (a
// fan-out to guarded handlers, or http.TimeoutHandler, which returns without its handler when
// the time is up): their guards and o's Done may take it at once. The event and observer were
// set before o was shared, and do not change.
func (o *Outcome) takeReport() bool {
	return atomic.LoadUint32(&o.report) == 1 && atomic.CompareAndSwapUint32(&o.report, 1, 0)
}

// mergeEvents is the event of a request the outer guard let through and the inner one
// answered: the inner result when it refused the request; otherwise the one that says most of
// how it was let through — unlimited (a limit went unchecked), then fallback_allowed, then
// allowed, then skipped. The waits add up.
func mergeEvents(outer, inner observe.RequestEvent) observe.RequestEvent {
	e := inner
	if rank(inner.Result) > 0 && rank(outer.Result) > rank(inner.Result) {
		e.Result = outer.Result
	}
	e.Waited += outer.Waited
	return e
}

// rank orders the results of a request that proceeded by how much they say of the way it was
// let through; it is 0 for a refusal.
func rank(r observe.Result) int {
	switch r {
	case observe.ResultSkipped, observe.ResultAllowlisted:
		return 1
	case observe.ResultAllowed:
		return 2
	case observe.ResultFallbackAllowed:
		return 3
	case observe.ResultUnlimited:
		return 4
	}
	return 0
}

// sameObserver reports whether a and b are one observer: outcomes are merged only for one
// (guards over stores with observers of their own each count the request).
func sameObserver(a, b *Observer) bool {
	return a != nil && a == b
}
