package ratelimit

import "github.com/a7d3e0dd/ratelimit/observe"

// Switch returns a guard that hands each request to the guard pick returns for it: the guard
// of the request's route, its tenant, or the rule of a rules document that matches it. A
// request for which pick returns nil is not limited: it proceeds, without rate-limit headers,
// and its outcome's Result is observe.ResultSkipped (reported to no observer: the switch has
// none).
// Every framework takes the switch as any guard (FromGuard), and [Guard.Done] completes an
// outcome with the guard that decided it.
//
//	byRoute := ratelimit.Switch(func(r ratelimit.Request) *ratelimit.Guard {
//		if strings.HasPrefix(r.Path(), "/login") {
//			return login
//		}
//		return api
//	})
//
// pick is called once per request, so a pick that reads its guards from an atomic pointer
// swaps them atomically: a request sees the old guards or the new, never a mix. It must not
// return the switch itself. Switch panics when pick is nil.
func Switch(pick func(Request) *Guard) *Guard {
	if pick == nil {
		panic("ratelimit: Switch(nil): give it a function that picks the guard of a request")
	}
	return &Guard{pick: pick}
}

// dispatch checks r with the guard that the switch picks for it, into o (the zero Outcome): a
// function of its own, so that the Outcome it is handed takes room on the stack of a switch's
// check only (see reserveInto).
//
//go:noinline
func (g *Guard) dispatch(r Request, o *Outcome) {
	h := g.pick(r)
	if h == nil {
		o.Proceed, o.Result = true, observe.ResultSkipped
		return
	}
	*o = h.Check(r)
}
