package algorithms

import (
	"fmt"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// tat is the model shared by the rate-based algorithms — GCRA, the token bucket and the leaky
// bucket, policing or shaping — which are one meter kept in one shape: the theoretical arrival
// time (TAT) of the next request. A full bucket is a TAT at or before now; each unit of cost
// moves the TAT one emission interval Window/Limit ahead; a request is admitted when the TAT
// it would move to is at most Burst intervals ahead of now. Remaining tokens, the room left in
// a leaky bucket and GCRA's remaining requests are all the distance from the TAT to that
// horizon, in intervals. Next, the time until one unit more than Remaining fits, is at most
// one interval.
//
// The TAT is held exactly: A microseconds and B/C of one, where the interval is Num/Den
// microseconds in lowest terms and C is the Den it was written under (0 < B < C, or B = C = 0
// on a whole microsecond). Every product this needs is at most Burst×Num, which [tat.Validate]
// keeps below 2^53.
//
// The state is the time the bucket is full again, whatever the Limit and Burst, so a policy
// whose limit or burst changes reads it as it is: the client keeps its debt in time. A
// fraction written under another denominator (another Limit) cannot be held in this one, and
// rounds the TAT up to the next whole microsecond: never down, so a change forgives nothing,
// and by less than a microsecond.
type tat struct {
	code    string
	shaping bool
}

// The models of the rate-based algorithms, one value each, so that the model an algorithm
// registers is the one its model() returns. A tat's methods have pointer receivers: the
// engines then call them directly, not through a wrapper that copies the tat first.
var (
	gcraModel    = &tat{code: "gc"}
	tokenModel   = &tat{code: "tb"}
	leakyModel   = &tat{code: "lb"}
	shapingModel = &tat{code: "ls", shaping: true}
)

func (m *tat) Code() string    { return m.code }
func (m *tat) UsesBurst() bool { return true }
func (m *tat) Shapes() bool    { return m.shaping }
func (m *tat) ExactWait() bool { return true }

// maxSpan is the longest a full bucket may take to drain, in microseconds (35 years): TATs
// stay below 2^53 until the year 2220.
const maxSpan = 1 << 50

func (m *tat) Validate(p algo.Params) error {
	c := p.Capacity()
	if c > (algo.Exact-p.Den)/p.Num {
		return fmt.Errorf("Burst %d at %d per %dµs is beyond exact arithmetic: Burst × Window/gcd(Window, Limit) must stay below 2^53 (Lua's numbers are doubles), and here it is %d × %d; lower Burst, or make Limit divide Window more evenly", c, p.Limit, p.Window, c, p.Num)
	}
	if c/p.Den > maxSpan/p.Num {
		return fmt.Errorf("Burst %d takes longer than 2^50µs (35 years) to drain at %d per %dµs; lower Burst", c, p.Limit, p.Window)
	}
	return nil
}

// instant is a TAT: us microseconds and fr/Den of one.
type instant struct{ us, fr int64 }

// plus returns t moved k intervals ahead; k×Num must be below 2^53.
func plus(p *algo.Params, t instant, k int64) instant {
	units := k*p.Num + t.fr
	return instant{t.us + units/p.Den, units % p.Den}
}

// before reports whether a is strictly before b.
func before(a, b instant) bool { return a.us < b.us || a.us == b.us && a.fr < b.fr }

// ceilTo is the time from now to t in whole microseconds, rounded up; t must not be before now.
func ceilTo(t instant, now int64) int64 {
	d := t.us - now
	if t.fr > 0 {
		d++
	}
	return d
}

// intervalsBetween is how many whole intervals fit from a to b; a must not be after b, and b
// at most Burst intervals after a.
func intervalsBetween(p *algo.Params, a, b instant) int64 {
	return ((b.us-a.us)*p.Den + b.fr - a.fr) / p.Num
}

// instantOf returns the TAT that s holds, read under p: a fraction of another denominator
// (written under another Limit) rounds it up to the next whole microsecond.
func instantOf(p *algo.Params, s *algo.State) instant {
	if s.B > 0 && s.C != p.Den {
		return instant{s.A + 1, 0}
	}
	return instant{s.A, s.B}
}

// put makes s hold the TAT t under p, with its fraction's denominator. It sets the fields one
// by one: a State built whole and copied in costs more than the rest of a check.
func put(p *algo.Params, s *algo.State, t instant) {
	s.Init, s.A, s.B, s.C, s.Log = true, t.us, t.fr, 0, nil
	if t.fr > 0 {
		s.C = p.Den
	}
}

// load returns the TAT of s, or now when the TAT has passed (the bucket is full).
func load(p *algo.Params, s *algo.State, now int64) instant {
	t := instantOf(p, s)
	if !s.Init || before(t, instant{now, 0}) {
		return instant{now, 0}
	}
	return t
}

func (m *tat) Check(p *algo.Params, s *algo.State, now, cost int64, r *algo.Result) {
	*r = algo.Result{}
	capacity := p.Capacity()
	t := load(p, s, now)
	put(p, s, t)
	horizon := plus(p, instant{now, 0}, capacity) // the latest TAT the bucket can hold
	after := t
	switch {
	case cost > capacity:
		r.RetryAfter = algo.Never
	case cost == 0 || !before(horizon, plus(p, t, cost)): // cost 0 reads, even with the clock gone back
		r.Allowed, after = true, plus(p, t, cost)
		if m.shaping && cost > 0 {
			r.Delay = ceilTo(t, now)
		}
	default:
		r.RetryAfter = past(plus(p, t, cost), horizon) // wait until the horizon moves there
	}
	if before(after, horizon) {
		r.Remaining = intervalsBetween(p, after, horizon)
	}
	r.ResetAfter = ceilTo(after, now)
	// Were Remaining spent now, the TAT would be Remaining intervals further; one unit more
	// fits when the horizon has moved an interval past it. Two steps: each product stays
	// below Burst×Num.
	r.Next = past(plus(p, plus(p, after, r.Remaining), 1), horizon)
}

// past is the time from b to a in whole microseconds, rounded up; a must be after b.
func past(a, b instant) int64 {
	d := a.us - b.us
	if a.fr > b.fr {
		d++
	}
	return d
}

func (m *tat) Charge(p *algo.Params, s *algo.State, now, cost int64) int64 {
	t := plus(p, instantOf(p, s), cost)
	put(p, s, t)
	return ceilTo(t, now)
}

// Refund moves the TAT back by what of the charge time has not yet given back, never before
// now: a charge of cost units made at time at has refilled by now−at.
func (m *tat) Refund(p *algo.Params, s *algo.State, now, cost, at int64) int64 {
	t := instantOf(p, s)
	if !s.Init || !before(instant{now, 0}, t) {
		return 0
	}
	units := cost * p.Num // the charge, in 1/Den µs
	if now > at {
		if now-at >= ceilTo(plus(p, instant{at, 0}, cost), at) {
			return ceilTo(t, now) // refilled already
		}
		units -= (now - at) * p.Den
	}
	total := t.fr - units
	t = instant{t.us + algo.FloorDiv(total, p.Den), total - algo.FloorDiv(total, p.Den)*p.Den}
	if !before(instant{now, 0}, t) {
		t = instant{now, 0}
	}
	put(p, s, t)
	return ceilTo(t, now)
}
