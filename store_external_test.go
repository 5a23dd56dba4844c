package ratelimit_test

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// callCounter is a Store written outside package ratelimit, as an application writes one: it
// counts the calls it passes on to the store it wraps. Declaring Unwrap hands the guard the
// wrapped store's capabilities (its clock, its in-flight slots, its observer), so wrapping
// keeps every fast path. A store written outside the package can only wrap the built-in ones:
// the algorithms' state is theirs (see ratelimit.Store).
type callCounter struct {
	next                    ratelimit.Store
	checks, refunds, resets atomic.Int64
}

var _ ratelimit.Store = (*callCounter)(nil)

func (c *callCounter) Check(ctx context.Context, key string, policies []ratelimit.Policy, cost int64, charge bool, out []ratelimit.PolicyResult) (time.Time, error) {
	c.checks.Add(1)
	return c.next.Check(ctx, key, policies, cost, charge, out)
}

func (c *callCounter) Refund(ctx context.Context, key string, policies []ratelimit.Policy, cost int64, at time.Time) error {
	c.refunds.Add(1)
	return c.next.Refund(ctx, key, policies, cost, at)
}

func (c *callCounter) Reset(ctx context.Context, key string, policies []ratelimit.Policy) error {
	c.resets.Add(1)
	return c.next.Reset(ctx, key, policies)
}

// Unwrap declares the store this one wraps.
func (c *callCounter) Unwrap() ratelimit.Store { return c.next }
