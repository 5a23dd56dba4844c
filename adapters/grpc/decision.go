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

// decisionKey is the context key of the decision the interceptors hand their handler.
type decisionKey struct{}

// decisionContext is a call's context with its decision: one allocation for both, where
// context.WithValue and a copy of the decision would take two.
type decisionContext struct {
	context.Context
	d ratelimit.Decision
}

func (c *decisionContext) Value(key any) any {
	if key == (decisionKey{}) {
		return &c.d
	}
	return c.Context.Value(key)
}
