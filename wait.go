package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// Wait blocks until key is admitted for one unit of cost, then returns its decision; it is
// shorthand for WaitN(ctx, key, 1).
func (l *Limiter) Wait(ctx context.Context, key string) (Decision, error) {
	return l.WaitN(ctx, key, 1)
}

// WaitN blocks until key is admitted for cost, or ctx ends: the way code that is not an HTTP
// handler — a worker calling an API limited across the fleet, a queue consumer, a batch job —
// takes its turn in a quota shared by every instance. Each attempt is one atomic check that
// charges only when it admits, so a wait never charges twice; a denied attempt sleeps, on the
// store's clock, until its Retry-After and asks again (another instance may have taken the
// turn meanwhile). Under a shaping policy (algorithms.LeakyBucket{Shaping: true}) the
// admission reserves the request's slot, and WaitN sleeps its Delay before returning.
//
// WaitN returns at once, without waiting, when the wait would outlast ctx's deadline: its
// error then wraps context.DeadlineExceeded, and the decision says how long it would have
// been. Nothing stays charged when WaitN fails: a shaping policy's slot that it reserved and
// will not wait for (past the deadline, or ctx ending during the wait) is given back. A cost
// no policy can ever admit (RetryAfter [algorithms.Never]) is an error at once, wrapping [ErrBadRequest].
// A store failure is returned as AllowN returns it: WaitN does not fail open.
// While an in-flight policy denies, WaitN asks again at growing intervals (5 ms, doubling to
// 100 ms) rather than at its Retry-After, since a slot comes back when a request ends; when a
// rate policy denies too, it first waits for the rate's turn, not for the slot's lease. The
// decision WaitN returns then holds its slots, as [Limiter.AllowN]'s does: give them back with
// [Limiter.Settle] when the work ends ([Transport] does, when a response's body is closed).
func (l *Limiter) WaitN(ctx context.Context, key string, cost int64) (Decision, error) {
	return l.wait(ctx, key, cost, l.AllowN)
}

// wait is WaitN, asking decide for each admission: AllowN, or Reserve for a request whose cost
// is settled after it ran (a Transport with ChargeAfter).
func (l *Limiter) wait(ctx context.Context, key string, cost int64, decide func(context.Context, string, int64) (Decision, error)) (Decision, error) {
	clock := clockOf(l.store)
	step := slotPollFirst
	for {
		d, err := decide(ctx, key, cost)
		if err != nil {
			return d, err
		}
		wait := d.RetryAfter
		if d.Allowed {
			wait = d.Delay // the slot a shaping policy reserved
		}
		switch {
		case wait == algorithms.Never:
			return d, &opError{opWaitN, ErrBadRequest, fmt.Errorf("a cost of %d exceeds the capacity of policy %q: no wait admits it", cost, d.Policy.Name)}
		case !d.Allowed && waitsForSlots(&d):
			wait = min(wait, step)
			step = min(2*step, slotPollMax)
		case !d.Allowed:
			// A rate policy denies: its turn is the earliest admission, even where an in-flight
			// slot's lease, ending later, binds d (a slot comes back when a request ends); then
			// the slots are polled as above.
			if rate, ok := rateDenial(&d); ok {
				wait = rate
			}
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait { // deadlines are the system clock's
			return d, l.abandon(ctx, key, d, &opError{opWaitN, nil, fmt.Errorf("admitted in %v at the earliest, after the context's deadline: %w", wait, context.DeadlineExceeded)})
		}
		if wait > 0 {
			if err := clock.Sleep(ctx, wait); err != nil {
				return d, l.abandon(ctx, key, d, &opError{opWaitN, nil, err})
			}
		}
		if d.Allowed {
			return d, nil
		}
	}
}

// abandon returns err, the error of a WaitN that gives up, having given back what d charged
// when it was an admission whose slot (under a shaping policy) the caller will not wait for:
// the next caller gets the turn. A refund that fails is joined to err.
func (l *Limiter) abandon(ctx context.Context, key string, d Decision, err error) error {
	if !d.Allowed {
		return err
	}
	if rerr := l.Settle(context.WithoutCancel(ctx), key, d, 0); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// opWaitN is what WaitN names in its errors.
const opWaitN = "wait"
