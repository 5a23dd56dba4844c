package algorithms

import (
	"fmt"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// InFlight bounds how many requests run at once rather than how often they arrive: at most
// Limit units of cost in flight per key (a request of cost 1 holds one slot), across every
// instance sharing the store. Window is a slot's lifetime: a slot is held until its request
// ends and gives it back, or at the latest until Window after it was taken or last renewed, so
// a slot held by an instance that died comes back by itself. The [ratelimit.Guard] gives a slot back
// when the handler returns (also when it panics or its client goes away) and renews it while
// the handler runs, every third of the lifetime; a caller of Limiter.Allow gives it back with
// Limiter.Settle. Burst is not used, and Limit is at most 1,000.
//
// State: the slots' times, oldest first, as the sliding log keeps them: a slot taken at t is
// held while now < t+Window. Releasing takes back a slot taken at that time; renewing moves
// it to now. Remaining is the free slots; RetryAfter is the time until enough slots are sure
// to be free (their lifetimes end; most come back much sooner).
//
// A policy whose Limit changes (same Name and Window) keeps the slots held. Over a lowered
// limit it refuses every request until enough slots come back; the requests that hold them
// still give them back and renew them.
type InFlight struct{}

// Name implements [Algorithm].
func (InFlight) Name() string { return "in_flight" }

func (InFlight) model() algo.Model { return inFlight{} }

// inFlight is the model of [InFlight]: the sliding log's, with Renew.
type inFlight struct{ slidingLog }

func (inFlight) Code() string { return "if" }

// ExactWait is false: a slot comes back when its request ends, which no RetryAfter foretells.
func (inFlight) ExactWait() bool { return false }

// Check is the sliding log's, without Next: a slot comes back when its request ends, which
// no time foretells.
func (m inFlight) Check(p *algo.Params, s *algo.State, now, cost int64, r *algo.Result) {
	m.slidingLog.Check(p, s, now, cost, r)
	r.Next = 0
}

// Renew moves a charge of cost slots taken at time at to now: it gives them back as Refund
// does, then takes them again, whatever the others hold (the request is running).
func (m inFlight) Renew(p *algo.Params, s *algo.State, now, cost, at int64) int64 {
	m.Refund(p, s, now, cost, at)
	var r algo.Result
	m.Check(p, s, now, 0, &r)
	return m.Charge(p, s, now, cost)
}

var _ algo.Renewer = inFlight{}

func (inFlight) Validate(p algo.Params) error {
	if p.Limit > maxLogLimit {
		return fmt.Errorf("Limit is %d, but an in-flight limit keeps one entry per slot and allows at most %d", p.Limit, maxLogLimit)
	}
	return nil
}
