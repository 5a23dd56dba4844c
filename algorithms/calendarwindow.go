package algorithms

import "github.com/a7d3e0dd/ratelimit/internal/algo"

// A FixedWindow also counts calendar periods (a policy with a Period: a day, a week, a month
// or a year in a time zone, or a billing cycle; see package calendar): at most Limit units of
// cost from the period's start to its end, whatever its length. The limiter finds the period
// of each check on its clock and hands the model that one period.
func (fixedWindow) Calendar() algo.Model { return calendarWindow{} }

// calendarGrace is how long a calendar period's state outlives the period's end, in
// microseconds: a minute. An instance whose clock runs up to that much behind the store's
// still finds the count of the period it is in, where the state expiring at the end on the
// store's clock would hand it a fresh quota.
const calendarGrace = 60_000_000

// calendarWindow is the model of a FixedWindow counting one calendar period: Params.Start is
// the period's start and Params.Window its length, both in microseconds.
//
// State: A = the period's start, B = the cost admitted in it. A state of another start is
// another period's (the stores keep each period under a key of its own, so it is met only in
// a key written under other parameters) and counts as no state. Remaining is Limit minus the
// cost admitted (0 when a lowered limit is below it); ResetAfter, RetryAfter and Next are the
// time to the period's end, at least a microsecond: a store whose clock is past the end (the
// limiter's clock picked the period, and runs behind) answers as at the end's last instant.
// The state lasts until a minute after the end (calendarGrace).
type calendarWindow struct{}

func (calendarWindow) Code() string               { return "cw" }
func (calendarWindow) UsesBurst() bool            { return false }
func (calendarWindow) Shapes() bool               { return false }
func (calendarWindow) ExactWait() bool            { return true }
func (calendarWindow) Validate(algo.Params) error { return nil }

// toEnd is the time from now to the end of the period of p, at least 1.
func toEnd(p *algo.Params, now int64) int64 {
	return max(p.Start+p.Window-now, 1)
}

func (calendarWindow) Check(p *algo.Params, s *algo.State, now, cost int64, r *algo.Result) {
	*r = algo.Result{}
	if !s.Init || s.A != p.Start {
		*s = algo.State{Init: true, A: p.Start}
	}
	countUntil(p.Limit, s.B, cost, toEnd(p, now), r)
}

func (calendarWindow) Charge(p *algo.Params, s *algo.State, now, cost int64) int64 {
	s.B += cost
	return toEnd(p, now) + calendarGrace
}

// Refund: the cost leaves the count if the state is the period's. The limiter refunds under
// the period of the charge, so a refund after the period ended finds its state (or none). The
// time of the charge is not weighed: the store's reading of it may fall a little after the
// period the limiter's clock picked, and the period's state is the charge's all the same.
func (calendarWindow) Refund(p *algo.Params, s *algo.State, now, cost, at int64) int64 {
	if !s.Init || s.A != p.Start {
		return 0
	}
	s.B = max(0, s.B-cost)
	return toEnd(p, now) + calendarGrace
}
