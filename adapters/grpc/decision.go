package grpclimit

import (
	"context"

	"github.com/a7d3e0dd/ratelimit"
)

// Decision returns the decision the interceptor made for the call whose context is ctx (a
// unary handler's ctx, a stream handler's ss.Context()): the remaining quota, the binding
// policy, every policy's result. It reports false when no limiter decided (the call was
// skipped, or the store failed and the call failed open). With two limiting interceptors on
// one call, it is the inner one's decision.
//
// [ratelimit.DecisionFrom] reads the decisions of the net/http middleware only.
func Decision(ctx context.Context) (ratelimit.Decision, bool) {
	if d, ok := ctx.Value(decisionKey{}).(*ratelimit.Decision); ok {
		return *d, true
	}
	return ratelimit.Decision{}, false
}

// decisionKey is the context key of the decision the interceptors hand their handler, and
// outcomeKey that of their outcome, which a guard after them takes the report of (see
// [ratelimit.Request]): a call through two limiting interceptors is counted once.
type (
	decisionKey struct{}
	outcomeKey  struct{}
)

// decisionContext is a call's context with its guard's outcome, and so its decision: one
// allocation for both, where context.WithValue and a copy would take two.
type decisionContext struct {
	context.Context
	o ratelimit.Outcome
}

func (c *decisionContext) Value(key any) any {
	switch key {
	case decisionKey{}:
		if c.o.Decision.Limit > 0 { // the limiter decided: not skipped, not failed open
			return &c.o.Decision
		}
	case outcomeKey{}:
		return &c.o
	}
	return c.Context.Value(key) // a guard that did not decide leaves the decision of one before
}
