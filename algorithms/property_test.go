package algorithms

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// logUniform returns an integer in [lo, hi], uniform in its logarithm.
func logUniform(rng *rand.Rand, lo, hi int64) int64 {
	if lo >= hi {
		return lo
	}
	v := int64(math.Exp(math.Log(float64(lo)) + rng.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
	return min(max(v, lo), hi)
}

// randomParams returns parameters for m: windows from 1ms to 366 days, limits from 1 to 10^9
// a second and up to 2^40 (the bounds of a Policy), bursts from 1 to far above the limit.
// Some are beyond what m accepts.
func randomParams(rng *rand.Rand, m algo.Model) algo.Params {
	const day = 24 * 3600 * 1_000_000
	var window int64
	switch rng.IntN(4) {
	case 0:
		window = []int64{1_000, 1_000_000, 60_000_000, 3_600_000_000, day}[rng.IntN(5)]
	default:
		window = logUniform(rng, 1_000, 366*day)
	}
	var limit int64
	switch rng.IntN(5) {
	case 0:
		limit = 1 + rng.Int64N(10)
	case 1: // a fast rate: up to 10^9 per second
		limit = logUniform(rng, 1, max(window*1000, 1))
	default:
		limit = logUniform(rng, 1, 1<<40)
	}
	limit = min(limit, 1<<40) // the largest Limit a Policy accepts
	if m.Code() == "sl" || m.Code() == "if" {
		limit = min(limit, 1+rng.Int64N(3_000)) // one entry per unit: keep the logs small
	}
	var burst int64
	if m.UsesBurst() && rng.IntN(2) == 0 {
		burst = logUniform(rng, 1, 4*limit)
	}
	return algo.NewParams(limit, window, burst)
}

// randomCost returns a cost under capacity c: 0, 1, anything up to c, c, or beyond.
func randomCost(rng *rand.Rand, c int64) int64 {
	switch rng.IntN(10) {
	case 0:
		return 0
	case 1, 2:
		return 1
	case 3:
		return c
	case 4:
		return c + 1 + rng.Int64N(c)
	default:
		return logUniform(rng, 1, c)
	}
}

// randomStep returns how far the clock moves: not at all, a few µs, a few intervals, a part of
// the window, a few windows, or back.
func randomStep(rng *rand.Rand, p algo.Params) int64 {
	interval := max(p.Num/p.Den, 1)
	switch rng.IntN(12) {
	case 0, 1:
		return 0
	case 2, 3:
		return 1 + rng.Int64N(5)
	case 4, 5:
		return rng.Int64N(min(4*interval, p.Window)) + 1
	case 6, 7:
		return rng.Int64N(p.Window/10 + 1)
	case 8, 9:
		return rng.Int64N(p.Window + 1)
	case 10:
		return rng.Int64N(3*p.Window + 1)
	default: // the clock goes back
		return -rng.Int64N(p.Window + 1)
	}
}

// changeLimit returns p with another Limit and Burst, valid for m, and the same Window: the
// parameters of a policy whose limit changed, which read the state written under p.
func changeLimit(rng *rand.Rand, m algo.Model, p algo.Params) algo.Params {
	for {
		limit := []int64{2 * p.Limit, max(p.Limit/2, 1), p.Limit + 1, randomParams(rng, m).Limit}[rng.IntN(4)]
		limit = min(limit, 1<<40)
		var burst int64
		if m.UsesBurst() && rng.IntN(2) == 0 {
			burst = logUniform(rng, 1, 4*limit)
		}
		if q := algo.NewParams(limit, p.Window, burst); m.Validate(q) == nil {
			return q
		}
	}
}

// exactWait reports whether the model's RetryAfter is the exact wait: advancing by RetryAfter-1
// still denies, by RetryAfter admits. It is what the model says (the denial cache relies on
// it), and the test holds it to that; the in-flight limit's wait is exact too as far as time
// goes (it says no because a slot also comes back when its request ends).
func exactWait(m algo.Model) bool { return m.ExactWait() || algo.Holds(m) }

// checkNext holds r.Next to its definition, from the state ns that checking cost left: with
// the request charged when allowed, and Remaining spent at once, one unit more is admitted
// after Next and (exactWait) not a microsecond sooner. The in-flight slots have no Next. It
// returns what is wrong, or "".
func checkNext(m algo.Model, p algo.Params, ns algo.State, now, cost int64, r algo.Result) string {
	if algo.Holds(m) {
		if r.Next != 0 {
			return fmt.Sprintf("in-flight Next %d, want 0", r.Next)
		}
		return ""
	}
	if r.Next <= 0 {
		return fmt.Sprintf("Next %d, want a positive time", r.Next)
	}
	s := cloneState(ns)
	if r.Allowed && cost > 0 {
		s, _ = charge(m, p, s, now, cost)
	}
	if r.Remaining > 0 {
		spent, s2 := check(m, p, s, now, r.Remaining)
		if !spent.Allowed {
			return fmt.Sprintf("its Remaining %d is refused at once: %+v", r.Remaining, spent)
		}
		s, _ = charge(m, p, s2, now, r.Remaining)
	}
	if later, _ := check(m, p, cloneState(s), now+r.Next, 1); !later.Allowed {
		return fmt.Sprintf("Remaining spent, one more is refused Next=%d later: %+v", r.Next, later)
	}
	if exactWait(m) {
		if early, _ := check(m, p, cloneState(s), now+r.Next-1, 1); early.Allowed {
			return fmt.Sprintf("Remaining spent, one more is admitted 1µs before Next=%d: %+v", r.Next, early)
		}
	}
	return ""
}

// TestInvariantsRandom runs random requests against random parameters (a fixed seed) and
// checks every decision's invariants, the exact wait of a denial, its Next, the lifetime of every charge
// and the bounds of every refund. Now and then the limit and burst change, the window staying,
// and the state written under the old ones is read under the new: the invariants still hold.
func TestInvariantsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(20240601, 7))
	ms := registered(t)
	runs, steps := 4000, 60
	if testing.Short() {
		runs = 300
	}
	var tested, refused, waits, nexts, charges, refunds int
	for run := 0; run < runs; run++ {
		n := ms[run%len(ms)]
		m := n.m
		p := randomParams(rng, m)
		if m.Validate(p) != nil {
			refused++
			continue
		}
		tested++
		c := capOf(m, p)
		now := t0 + rng.Int64N(p.Window)
		latest := now // the latest time seen: before it, the clock has gone back
		var s algo.State
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("%s %s (interval %d/%d) run %d at %d: "+format, append([]any{n.name, pstr(p), p.Num, p.Den, run, now}, args...)...)
		}
		for step := 0; step < steps; step++ {
			if rng.IntN(10) == 0 {
				p = changeLimit(rng, m, p)
				c = capOf(m, p)
			}
			now += randomStep(rng, p)
			latest = max(latest, now)
			cost := randomCost(rng, c)
			r, ns := check(m, p, s, now, cost)
			if msg := checkResult(m, c, cost, r); msg != "" {
				fail("cost %d: %+v: %s", cost, r, msg)
			}
			if r2, _ := check(m, p, s, now, cost); r2 != r {
				fail("cost %d: checked twice: %+v then %+v", cost, r, r2)
			}
			if cost == 0 && now >= latest && !r.Allowed {
				fail("cost 0 denied: %+v", r)
			}
			if !r.Allowed && r.RetryAfter != algo.Never {
				waits++
				later, _ := check(m, p, s, now+r.RetryAfter, cost)
				if !later.Allowed {
					fail("cost %d denied with RetryAfter %d, and still denied then: %+v", cost, r.RetryAfter, later)
				}
				if exactWait(m) {
					if early, _ := check(m, p, s, now+r.RetryAfter-1, cost); early.Allowed {
						fail("cost %d denied with RetryAfter %d, but allowed 1µs sooner: %+v", cost, r.RetryAfter, early)
					}
				}
			}
			if now >= latest {
				nexts++
				if msg := checkNext(m, p, ns, now, cost, r); msg != "" {
					fail("cost %d: %+v: %s", cost, r, msg)
				}
			}
			s = ns
			if !r.Allowed || cost == 0 || rng.IntN(5) == 0 {
				continue
			}
			pre := cloneState(s)
			charges++
			var ttl int64
			s, ttl = charge(m, p, s, now, cost)
			if ttl <= 0 {
				fail("charge of %d: lifetime %d", cost, ttl)
			}
			for _, q := range []int64{0, 1, c} {
				want, _ := check(m, p, algo.State{}, now+ttl, q)
				if got, _ := check(m, p, s, now+ttl, q); got != want {
					fail("charge of %d, lifetime %d: cost %d then: %+v; want %+v as with no state", cost, ttl, q, got, want)
				}
			}
			if rng.IntN(4) == 0 && now >= latest {
				// Refund it, at once or later, and look at it a little later still.
				refunds++
				d := []int64{0, 1, rng.Int64N(p.Window + 1), rng.Int64N(3*p.Window + 1)}[rng.IntN(4)]
				refunded, _ := refund(m, p, cloneState(s), now+d, cost, now)
				e := d + rng.Int64N(p.Window+1)
				for _, q := range []int64{0, 1, c} {
					ch, _ := check(m, p, s, now+e, q)
					un, _ := check(m, p, pre, now+e, q)
					got, _ := check(m, p, refunded, now+e, q)
					if q == 0 && (got.Remaining < ch.Remaining || got.Remaining > un.Remaining) || ch.Allowed && !got.Allowed || got.Allowed && !un.Allowed {
						fail("charge of %d refunded %dµs later: cost %d at +%d: %+v; want between %+v (charged) and %+v (never charged)", cost, d, q, e, got, ch, un)
					}
				}
				if d == 0 {
					for _, q := range []int64{0, 1, c} {
						un, _ := check(m, p, pre, now+e, q)
						if got, _ := check(m, p, refunded, now+e, q); got != un {
							fail("charge of %d refunded at once: cost %d at +%d: %+v; want %+v as never charged", cost, q, e, got, un)
						}
					}
				}
				s = refunded
				latest = max(latest, now+d) // the refund wrote its state at now+d
			}
		}
	}
	t.Logf("%d random parameter sets run, %d refused by Validate; %d denials' waits, %d Nexts, %d charges' lifetimes, %d refunds checked", tested, refused, waits, nexts, charges, refunds)
	if tested < runs/2 {
		t.Errorf("only %d of %d random parameter sets were accepted", tested, runs)
	}
}
