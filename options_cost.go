package ratelimit

import (
	"fmt"

	"github.com/a7d3e0dd/ratelimit/cost"
)

// ChargeAfter charges each request what it cost once its response has been sent — the tokens
// of a completion, the bytes streamed — as charge makes it of the request's [cost.After]: the
// status its client got, the bytes written, what its handler reported with [cost.Report].
// [cost.Reported] and [cost.Written] are the usual choices:
//
//	ratelimit.Middleware(tokens,
//		ratelimit.WithCost(func(r ratelimit.Request) int64 { return 500 }), // the estimate
//		ratelimit.ChargeAfter(cost.Reported))
//
// The request is admitted against its estimate, its [WithCost] (1 without one), held while
// it runs ([Limiter.Reserve]): a request is admitted only when what is used, what the
// requests in flight hold and its estimate fit, so concurrent requests cannot all find the
// quota free. When it ends its charge becomes what charge returns ([Limiter.Settle]): less
// gives the difference back, more is an overdraft that refuses the next requests until time
// repays it. A streamed response settles when it ends, also when its client goes away
// mid-stream (what was written is charged); a handler that panics before answering is told
// as a 500 (after answering, with the status its client got). A
// negative charge is reported to the error handler and the estimate stays charged.
//
// The guard's policies must be able to hold (no in-flight, shaping or leasing policy: see
// Limiter.Reserve); ChargeAfter replaces [CountIf] (a status that does not count is a charge
// of 0). The framework adapters meter their handlers alike; see docs/costs.md.
func ChargeAfter(charge func(cost.After) int64) Option {
	return func(gc *guardConfig) {
		if !gc.once("ChargeAfter", "give one function that charges what you mean") {
			return
		}
		if charge == nil {
			gc.errorf("ChargeAfter(nil): give it a function, such as cost.Reported")
			return
		}
		gc.after = charge
	}
}

// fitsAfter reports why ChargeAfter cannot apply to the policies of l, or nil.
func (gc *guardConfig) fitsAfter(l *Limiter) error {
	if gc.after == nil {
		return nil
	}
	if err := l.holdable(); err != nil {
		return fmt.Errorf("ChargeAfter: %w", err)
	}
	if _, ok := holdsOf(l.store); !ok {
		return fmt.Errorf("ChargeAfter: %w", errNoHolds)
	}
	return nil
}
