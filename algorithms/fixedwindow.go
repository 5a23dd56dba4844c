package algorithms

import "github.com/a7d3e0dd/ratelimit/internal/algo"

// FixedWindow admits at most Limit units of cost per window; windows are aligned to multiples
// of Window since the Unix epoch. Across a window boundary it may admit up to 2×Limit within one
// Window (Limit at the end of one window, Limit at the start of the next). Burst is not used.
//
// State: A = the window's index (now / Window), B = the cost admitted in it.
// Remaining is Limit minus the cost admitted in the current window (0 when a lowered limit is
// below it); ResetAfter, RetryAfter and Next are the time to the window's end. Should the
// clock go back, the state's window stays current.
//
// A policy whose Limit changes (same Name and Window) keeps the current window's count as it
// is: raised, the count has the new room left; lowered below the count, it refuses every
// request until the window ends.
type FixedWindow struct{}

// Name implements [Algorithm].
func (FixedWindow) Name() string { return "fixed_window" }

func (FixedWindow) model() algo.Model { return fixedWindow{} }

// fixedWindow is the model of [FixedWindow].
type fixedWindow struct{}

func (fixedWindow) Code() string               { return "fw" }
func (fixedWindow) UsesBurst() bool            { return false }
func (fixedWindow) Shapes() bool               { return false }
func (fixedWindow) ExactWait() bool            { return true }
func (fixedWindow) Validate(algo.Params) error { return nil }

func (fixedWindow) Check(p *algo.Params, s *algo.State, now, cost int64, r *algo.Result) {
	*r = algo.Result{}
	k := algo.FloorDiv(now, p.Window)
	if s.Init && s.A > k {
		k = s.A // the clock went back: stay in the state's window
	}
	if !s.Init || s.A != k {
		*s = algo.State{Init: true, A: k}
	}
	countUntil(p.Limit, s.B, cost, (k+1)*p.Window-now, r)
}

// countUntil is the verdict on a request of cost in a window of limit that has used units
// admitted and ends in end microseconds: whatever the window has left is all it admits until
// it ends. A fixed window and a calendar period decide alike.
func countUntil(limit, used, cost, end int64, r *algo.Result) {
	r.Next = end
	r.Allowed = cost == 0 || used+cost <= limit // cost 0 reads, even over a lowered limit
	switch {
	case r.Allowed:
		used += cost
	case cost > limit:
		r.RetryAfter = algo.Never
	default:
		r.RetryAfter = end
	}
	r.Remaining = max(limit-used, 0)
	if used > 0 {
		r.ResetAfter = end
	}
}

func (fixedWindow) Charge(p *algo.Params, s *algo.State, now, cost int64) int64 {
	s.B += cost
	return (s.A+1)*p.Window - now
}

// Refund: the cost leaves the count if its window is still the state's.
func (fixedWindow) Refund(p *algo.Params, s *algo.State, now, cost, at int64) int64 {
	if !s.Init || s.A != algo.FloorDiv(at, p.Window) {
		return 0
	}
	s.B = max(0, s.B-cost)
	return (s.A+1)*p.Window - now
}
