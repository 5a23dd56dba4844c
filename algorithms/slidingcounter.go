package algorithms

import (
	"math"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// SlidingCounter approximates a sliding window with two counters: the cost admitted in the
// current aligned window and in the previous one. At a point that is a fraction f through the
// current window it estimates the last Window's cost as
//
//	previous×(1−f) + current
//
// and admits a request when estimate + cost ≤ Limit. It assumes the previous window's requests
// were spread evenly: it never admits more than 2×Limit in any interval of length Window, and
// it is exact when traffic is steady. Burst is not used.
//
// State: A = the current window's index, B = its cost, C = the previous window's cost.
// Remaining is Limit minus the estimate, rounded down; ResetAfter is the time until both
// windows hold nothing; RetryAfter is the time until the estimate leaves room for the cost;
// Next is the time until it leaves room for one more unit once Remaining is spent.
// Should the clock go back, the state's window stays current.
//
// A policy whose Limit changes (same Name and Window) keeps both counts, so the estimate is
// the same cost weighed against the new limit. Over a lowered limit it refuses every request
// until the estimate falls below the limit, which takes at most two windows.
//
// The weight is computed in float64, in the same order as the Lua script, so the memory and
// Redis stores agree to the bit.
type SlidingCounter struct{}

// Name implements [Algorithm].
func (SlidingCounter) Name() string { return "sliding_window_counter" }

func (SlidingCounter) model() algo.Model { return slidingCounter{} }

// slidingCounter is the model of [SlidingCounter].
type slidingCounter struct{}

func (slidingCounter) Code() string    { return "sc" }
func (slidingCounter) UsesBurst() bool { return false }
func (slidingCounter) Shapes() bool    { return false }

// ExactWait is false: RetryAfter solves the estimate for the time it leaves room in exact
// arithmetic, but the estimate is compared in float64, whose rounding can leave room sooner
// (by up to about a millisecond in windows of months, and by far more when the limit is
// near 2^40, where a small estimate vanishes beside it). RetryAfter is an upper bound.
func (slidingCounter) ExactWait() bool            { return false }
func (slidingCounter) Validate(algo.Params) error { return nil }

func (slidingCounter) Check(p *algo.Params, s *algo.State, now, cost int64, r *algo.Result) {
	*r = algo.Result{}
	k := algo.FloorDiv(now, p.Window)
	if s.Init && s.A > k {
		k = s.A // the clock went back: stay in the state's window
	}
	switch {
	case !s.Init || s.A < k-1:
		*s = algo.State{Init: true, A: k}
	case s.A == k-1:
		*s = algo.State{Init: true, A: k, C: s.B}
	}
	elapsed := max(now-k*p.Window, 0) // 0 when the clock went back before the state's window
	w := float64(p.Window)
	est := float64(s.C)*float64(p.Window-elapsed)/w + float64(s.B)
	r.Allowed = cost == 0 || est+float64(cost) <= float64(p.Limit)
	cur := s.B
	switch {
	case r.Allowed:
		est += float64(cost)
		cur += cost
	case cost > p.Limit:
		r.RetryAfter = algo.Never
	default:
		r.RetryAfter = counterRoom(p, k, s.B, s.C, cost) - now
	}
	r.Remaining = max(int64(math.Floor(float64(p.Limit)-est)), 0)
	r.Next = counterRoom(p, k, cur+r.Remaining, s.C, 1) - now
	switch {
	case cur > 0:
		r.ResetAfter = (k+2)*p.Window - now
	case s.C > 0:
		r.ResetAfter = (k+1)*p.Window - now
	}
}

// counterRoom is when, in window k holding cur with prev in the one before, the estimate
// leaves room for cost, which it does not now: later in this window as the previous window's
// weight falls, or in the next, where cur is the previous window's cost. cost is at most
// Limit. The time is solved for in float64, then moved on, a microsecond at a time, until
// the estimate Check computes then admits cost: with counts near 2^40 the solution can fall
// a rounding error short, and a wait must never end on a refusal.
func counterRoom(p *algo.Params, k, cur, prev, cost int64) int64 {
	w := float64(p.Window)
	var at int64
	if room := p.Limit - cur - cost; room >= 0 {
		at = int64(float64(k*p.Window) + math.Ceil(w-float64(room)*w/float64(prev)))
	} else {
		f := float64((k + 1) * p.Window)
		if e := w - float64(p.Limit-cost)*w/float64(cur); e > 0 {
			f += math.Ceil(e)
		}
		at = int64(f)
	}
	for i := 0; i < maxRoomSteps && !counterFits(p, k, cur, prev, cost, at); i++ {
		at++
	}
	return at
}

// maxRoomSteps bounds the microseconds counterRoom moves on: one has always been enough.
const maxRoomSteps = 16

// counterFits reports whether, at time at, in window k or a later one, the estimate of a
// state holding cur in window k and prev in the one before admits cost, computed as Check
// computes it.
func counterFits(p *algo.Params, k, cur, prev, cost, at int64) bool {
	var est float64
	switch algo.FloorDiv(at, p.Window) {
	case k:
		est = float64(prev)*float64(p.Window-(at-k*p.Window))/float64(p.Window) + float64(cur)
	case k + 1:
		est = float64(cur)*float64(p.Window-(at-(k+1)*p.Window))/float64(p.Window) + 0
	}
	return est+float64(cost) <= float64(p.Limit)
}

func (slidingCounter) Charge(p *algo.Params, s *algo.State, now, cost int64) int64 {
	s.B += cost
	return (s.A+2)*p.Window - now
}

// Refund: the cost leaves the count of the window it was charged in,
// the current or the previous one.
func (a slidingCounter) Refund(p *algo.Params, s *algo.State, now, cost, at int64) int64 {
	if !s.Init {
		return 0
	}
	var r algo.Result
	a.Check(p, s, now, 0, &r) // roll the windows to now
	switch algo.FloorDiv(at, p.Window) {
	case s.A:
		s.B = max(0, s.B-cost)
	case s.A - 1:
		s.C = max(0, s.C-cost)
	}
	return (s.A+2)*p.Window - now
}
