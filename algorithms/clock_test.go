package algorithms

import (
	"slices"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// checkResult reports what is wrong with r, the decision on a request of cost under capacity
// c, or "".
func checkResult(m algo.Model, c, cost int64, r algo.Result) string {
	switch {
	case r.Remaining < 0 || r.Remaining > c:
		return "Remaining outside [0, capacity]"
	case r.ResetAfter < 0:
		return "ResetAfter < 0"
	case r.RetryAfter < 0 && r.RetryAfter != algo.Never:
		return "RetryAfter < 0 and not Never"
	case (r.RetryAfter == algo.Never) != (cost > c):
		return "RetryAfter is Never exactly when the cost exceeds the capacity"
	case r.Allowed && r.RetryAfter != 0:
		return "allowed with a RetryAfter"
	case !r.Allowed && r.RetryAfter == 0:
		return "denied without a RetryAfter"
	case r.Delay < 0 || r.Delay > 0 && (!m.Shapes() || !r.Allowed):
		return "a Delay where there is no shaping"
	case r.Delay > r.ResetAfter:
		return "a Delay beyond ResetAfter"
	}
	return ""
}

// clockBackState returns a state charged at late and, when it fits, a window before it, to be
// looked at earlier than late.
func clockBackState(m algo.Model, p algo.Params, late int64) algo.State {
	c := capOf(m, p)
	var s algo.State
	if r, ns := check(m, p, s, late-p.Window, c/2); r.Allowed && c/2 > 0 {
		s, _ = charge(m, p, ns, late-p.Window, c/2)
	}
	if r, ns := check(m, p, s, late, max(c/4, 1)); r.Allowed {
		s, _ = charge(m, p, ns, late, max(c/4, 1))
	}
	return s
}

// forEachParams runs f in a subtest for every registered model and parameter set.
func forEachParams(t *testing.T, f func(t *testing.T, m algo.Model, p algo.Params)) {
	for _, n := range registered(t) {
		t.Run(n.name, func(t *testing.T) {
			for _, p := range paramSets(n.m) {
				t.Run(pstr(p), func(t *testing.T) { f(t, n.m, p) })
			}
		})
	}
}

// TestClockGoesBackDecisions: when now is before the time the state was last written (a clock
// stepped back, or two requests whose times were read before the store's lock and applied out
// of order), every decision is still well formed, and the state's window stays current.
func TestClockGoesBackDecisions(t *testing.T) {
	forEachParams(t, func(t *testing.T, m algo.Model, p algo.Params) {
		c := capOf(m, p)
		late := t0 + 5*p.Window + p.Window/2
		s := clockBackState(m, p, late)
		at, _ := check(m, p, s, late, 0)
		for _, back := range []int64{1, p.Window / 3, p.Window / 2, p.Window, 3 * p.Window} {
			now := late - back
			for _, q := range costs(c) {
				r, ns := check(m, p, s, now, q)
				if msg := checkResult(m, c, q, r); msg != "" {
					t.Fatalf("clock back %dµs, cost %d: %+v: %s", back, q, r, msg)
				}
				if r.Allowed && q > 0 {
					// Charging at the earlier time counts from then on.
					s2, ttl := charge(m, p, cloneState(ns), now, q)
					if ttl <= 0 {
						t.Fatalf("clock back %dµs, charge of %d: lifetime %d", back, q, ttl)
					}
					if len(s2.Log) > 0 && !slices.IsSorted(s2.Log) {
						t.Fatalf("clock back %dµs: log out of order: %v", back, s2.Log)
					}
					if got, _ := check(m, p, s2, late, 0); got.Remaining != max(at.Remaining-q, 0) {
						t.Fatalf("a charge of %d made %dµs back leaves Remaining %d at the later time; want %d", q, back, got.Remaining, max(at.Remaining-q, 0))
					}
				}
			}
			// The counters read the state's window as at its start, never as more than it holds.
			start := algo.FloorDiv(late, p.Window) * p.Window
			if (m.Code() == "fw" || m.Code() == "sc") && now < start {
				want, _ := check(m, p, s, start, 0)
				if r, _ := check(m, p, s, now, 0); r.Remaining != want.Remaining {
					t.Fatalf("clock back %dµs, before the state's window: Remaining %d; want %d as at the start of the state's window", back, r.Remaining, want.Remaining)
				}
			}
		}
	})
}

// TestClockGoesBackCostZero: the Model contract says "A cost of 0 is always allowed and reads
// the state"; so it is when the clock went back.
func TestClockGoesBackCostZero(t *testing.T) {
	forEachParams(t, func(t *testing.T, m algo.Model, p algo.Params) {
		late := t0 + 5*p.Window + p.Window/2
		s := clockBackState(m, p, late)
		if c := capOf(m, p); m.UsesBurst() {
			s, _ = mustCharge(t, m, p, algo.State{}, late, c) // an empty bucket
		}
		for _, back := range []int64{1, p.Window / 3, p.Window, 3 * p.Window} {
			if r, _ := check(m, p, s, late-back, 0); !r.Allowed || r.RetryAfter != 0 {
				t.Fatalf("clock back %dµs: cost 0: %+v; want allowed", back, r)
			}
		}
	})
}

// TestClockGoesBackRefund: a charge made after the clock went back is refunded like any other:
// a refund right after it restores every decision. For the window algorithms the refund may
// instead be lost, wholly or in part — never more than given: a charge made while the clock stood behind the
// state's window is filed under the state's window (or newest time) but Refund looks for it
// under at, and finding it would need the decision to carry the window each policy charged.
// The memory store reads its clock under the shard lock, so only a clock that goes back (an
// injected one, or Redis TIME after a failover to a server behind) can lose a refund.
func TestClockGoesBackRefund(t *testing.T) {
	forEachParams(t, func(t *testing.T, m algo.Model, p algo.Params) {
		mayLose := m.Code() == "fw" || m.Code() == "sl" || m.Code() == "if" || m.Code() == "sc"
		c := capOf(m, p)
		late := t0 + 5*p.Window + p.Window/2
		s := clockBackState(m, p, late)
		for _, back := range []int64{1, p.Window / 2, p.Window} {
			now := late - back
			r, pre := check(m, p, cloneState(s), now, 1)
			if !r.Allowed {
				continue
			}
			pre = cloneState(pre)
			charged, _ := charge(m, p, cloneState(pre), now, 1)
			refunded, _ := refund(m, p, cloneState(charged), now, 1, now)
			for _, e := range []int64{back, back + 1, back + p.Window/3} {
				for _, q := range costs(c) {
					want, _ := check(m, p, pre, now+e, q)
					got, _ := check(m, p, refunded, now+e, q)
					if got == want {
						continue
					}
					if mayLose {
						// Lost, wholly or in part: between no refund and the full one.
						lost, _ := check(m, p, charged, now+e, q)
						if a := available(got, q); a >= available(lost, q) && a <= available(want, q) &&
							(!got.Allowed || want.Allowed) && (got.Allowed || !lost.Allowed) {
							continue
						}
					}
					t.Fatalf("clock back %dµs, a charge of 1 refunded at once: cost %d %dµs later: %+v; want %+v as before the charge", back, q, e, got, want)
				}
			}
		}
	})
}

// TestClockBackOneMicrosecond: the smallest step back, as when two requests read the time
// before the memory store's lock and are applied in the other order. A cost of 0 must still be
// allowed.
func TestClockBackOneMicrosecond(t *testing.T) {
	p := algo.NewParams(10, 1_000, 0)
	t.Run("gcra", func(t *testing.T) {
		m := algo.Of(GCRA{})
		s, _ := mustCharge(t, m, p, algo.State{}, t0+500, 10) // empties the bucket at t0+500
		if r, _ := check(m, p, s, t0+499, 0); !r.Allowed {
			t.Errorf("cost 0, 1µs before the charge that emptied the bucket: %+v; want allowed", r)
		}
	})
	t.Run("sliding_window_counter", func(t *testing.T) {
		m := algo.Of(SlidingCounter{})
		s, _ := mustCharge(t, m, p, algo.State{}, t0, 10)
		s, _ = mustCharge(t, m, p, s, t0+1_500, 5) // estimate 10×0.5 + 5 = 10: full
		if r, _ := check(m, p, s, t0+1_499, 0); !r.Allowed {
			t.Errorf("cost 0, 1µs before the charge that filled the window: %+v; want allowed", r)
		}
	})
}

// available is how much a decision on cost q says was free before it: Remaining counts what is
// left after an allowed request, and what is left now after a denied one.
func available(r algo.Result, q int64) int64 {
	if r.Allowed {
		return r.Remaining + q
	}
	return r.Remaining
}
