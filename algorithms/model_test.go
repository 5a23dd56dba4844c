package algorithms

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// forEach runs f for every registered model, every parameter set and every scenario.
func forEach(t *testing.T, f func(t *testing.T, m algo.Model, p algo.Params, sc scenario)) {
	for _, n := range registered(t) {
		for _, p := range paramSets(n.m) {
			for _, sc := range scenarios(t, n.m, p) {
				t.Run(n.name+"/"+pstr(p)+"/"+sc.name, func(t *testing.T) { f(t, n.m, p, sc) })
			}
		}
	}
}

func TestCostZeroIsAllowedAndReadsTheState(t *testing.T) {
	forEach(t, func(t *testing.T, m algo.Model, p algo.Params, sc scenario) {
		r, s := check(m, p, sc.s, sc.now, 0)
		if !r.Allowed || r.RetryAfter != 0 || r.Delay != 0 {
			t.Fatalf("cost 0: %+v; want allowed, no wait", r)
		}
		// Cost 0 reads: its Remaining is what a request of that size may take.
		c := capOf(m, p)
		if r.Remaining < 0 || r.Remaining > c {
			t.Fatalf("cost 0: Remaining %d outside [0, %d]", r.Remaining, c)
		}
		if r.Remaining > 0 {
			if got, _ := check(m, p, sc.s, sc.now, r.Remaining); !got.Allowed {
				t.Errorf("cost 0 says Remaining %d, but a request of %d is denied: %+v", r.Remaining, r.Remaining, got)
			}
		}
		if r.Remaining < c && m.Code() != "sc" { // the counter's estimate is not whole
			if got, _ := check(m, p, sc.s, sc.now, r.Remaining+1); got.Allowed {
				t.Errorf("cost 0 says Remaining %d, but a request of %d is allowed: %+v", r.Remaining, r.Remaining+1, got)
			}
		}
		// Charging nothing changes no decision.
		s0, _ := charge(m, p, cloneState(s), sc.now, 0)
		for _, q := range costs(c) {
			want, _ := check(m, p, sc.s, sc.now, q)
			if got, _ := check(m, p, s0, sc.now, q); got != want {
				t.Errorf("after a charge of 0, cost %d: %+v; want %+v", q, got, want)
			}
		}
	})
}

func TestCostZeroReadsWhatWasCharged(t *testing.T) {
	for _, n := range registered(t) {
		for _, p := range paramSets(n.m) {
			c := capOf(n.m, p)
			r, _ := check(n.m, p, algo.State{}, t0, 0)
			r.Next = 0 // see checkNext
			if r != (algo.Result{Allowed: true, Remaining: c}) {
				t.Errorf("%s %s: fresh, cost 0: %+v; want allowed, Remaining %d, nothing else", n.name, pstr(p), r, c)
			}
			for _, k := range []int64{1, c / 3, c} {
				if k == 0 {
					continue
				}
				s, _ := mustCharge(t, n.m, p, algo.State{}, t0, k)
				r, _ := check(n.m, p, s, t0, 0)
				if !r.Allowed || r.Remaining != c-k || r.ResetAfter <= 0 {
					t.Errorf("%s %s: cost 0 after a charge of %d: %+v; want allowed, Remaining %d, ResetAfter > 0", n.name, pstr(p), k, r, c-k)
				}
			}
		}
	}
}

func TestCostAboveCapacityIsNever(t *testing.T) {
	forEach(t, func(t *testing.T, m algo.Model, p algo.Params, sc scenario) {
		c := capOf(m, p)
		for _, q := range []int64{c + 1, 2 * c, c + 1_000_000} {
			r, _ := check(m, p, sc.s, sc.now, q)
			if r.Allowed || r.RetryAfter != algo.Never || r.Delay != 0 {
				t.Errorf("cost %d > capacity %d: %+v; want denied, RetryAfter Never", q, c, r)
			}
		}
		if sc.name == "fresh" {
			r, _ := check(m, p, sc.s, sc.now, c)
			if !r.Allowed || r.Remaining != 0 {
				t.Errorf("fresh, cost = capacity %d: %+v; want allowed, Remaining 0", c, r)
			}
		}
	})
}

func TestCheckChangesNothing(t *testing.T) {
	forEach(t, func(t *testing.T, m algo.Model, p algo.Params, sc scenario) {
		orig := cloneState(sc.s)
		later := sc.now + p.Window/2 + 1
		var before []algo.Result
		for _, q := range costs(capOf(m, p)) {
			r, _ := check(m, p, sc.s, later, q)
			before = append(before, r)
		}
		for _, q := range costs(capOf(m, p)) {
			r1, s1 := check(m, p, sc.s, sc.now, q)
			r2, s2 := check(m, p, sc.s, sc.now, q)
			if r1 != r2 || !reflect.DeepEqual(s1, s2) {
				t.Fatalf("cost %d: checked twice: %+v, %v then %+v, %v", q, r1, s1, r2, s2)
			}
			// The normalised state changes no decision.
			if r3, s3 := check(m, p, s1, sc.now, q); r3 != r1 || !reflect.DeepEqual(s3, s1) {
				t.Errorf("cost %d: on the state Check returned: %+v, %v; want %+v, %v", q, r3, s3, r1, s1)
			}
		}
		if !reflect.DeepEqual(orig, sc.s) {
			t.Fatalf("Check changed the state it was given: %v, was %v", sc.s, orig)
		}
		for i, q := range costs(capOf(m, p)) {
			if r, _ := check(m, p, sc.s, later, q); r != before[i] {
				t.Errorf("cost %d at %d: %+v after other checks, %+v before", q, later, r, before[i])
			}
		}
	})
}

func TestChargeLifetime(t *testing.T) {
	forEach(t, func(t *testing.T, m algo.Model, p algo.Params, sc scenario) {
		c := capOf(m, p)
		for _, k := range []int64{1, c / 2, c} {
			r, s := check(m, p, cloneState(sc.s), sc.now, k)
			if k == 0 || !r.Allowed {
				continue
			}
			s, ttl := charge(m, p, s, sc.now, k)
			if ttl <= 0 {
				t.Fatalf("charge of %d: lifetime %d; want > 0", k, ttl)
			}
			if r.ResetAfter > ttl {
				t.Errorf("charge of %d: lifetime %d shorter than the decision's ResetAfter %d", k, ttl, r.ResetAfter)
			}
			at := sc.now + ttl
			for _, q := range costs(c) {
				want, _ := check(m, p, algo.State{}, at, q)
				if got, _ := check(m, p, s, at, q); got != want {
					t.Errorf("charge of %d, lifetime %d: cost %d at its end: %+v; want %+v as with no state", k, ttl, q, got, want)
				}
			}
			if sc.name == "fresh" && k == c {
				// A full charge matters until its lifetime ends, not much shorter.
				want, _ := check(m, p, algo.State{}, at-1, 0)
				if got, _ := check(m, p, s, at-1, 0); got == want {
					t.Errorf("charge of the whole capacity %d: lifetime %d, but it no longer matters at %d µs: %+v", k, ttl, ttl-1, got)
				}
			}
		}
	})
}

func TestRefundRightAfterChargeRestores(t *testing.T) {
	forEach(t, func(t *testing.T, m algo.Model, p algo.Params, sc scenario) {
		c := capOf(m, p)
		for _, k := range []int64{1, c / 2, c} {
			r, pre := check(m, p, cloneState(sc.s), sc.now, k)
			if k == 0 || !r.Allowed {
				continue
			}
			pre = cloneState(pre)
			charged, _ := charge(m, p, cloneState(pre), sc.now, k)
			refunded, ttl := refund(m, p, cloneState(charged), sc.now, k, sc.now)
			for _, d := range []int64{0, 1, p.Window / 7, p.Window / 2, p.Window, 2 * p.Window} {
				for _, q := range costs(c) {
					want, _ := check(m, p, pre, sc.now+d, q)
					if got, _ := check(m, p, refunded, sc.now+d, q); got != want {
						t.Errorf("charge of %d refunded at once: cost %d %dµs later: %+v; want %+v as before the charge", k, q, d, got, want)
					}
				}
			}
			// The refund's lifetime: after it, the state is as good as none.
			end := sc.now + max(ttl, 0)
			for _, q := range costs(c) {
				want, _ := check(m, p, algo.State{}, end, q)
				if got, _ := check(m, p, refunded, end, q); got != want {
					t.Errorf("refunded state, lifetime %d: cost %d at its end: %+v; want %+v as with no state", ttl, q, got, want)
				}
			}
		}
	})
}

// refillTime is how long after a charge of k units at time at (the state then being pre) the
// charge has been given back by time alone.
func refillTime(m algo.Model, p algo.Params, k int64) int64 {
	switch m.Code() {
	case "fw":
		return p.Window // at the latest: the next window
	case "sc":
		return 2 * p.Window
	case "sl", "if": // the in-flight limit is the sliding log, its window a slot's lifetime
		return p.Window
	default: // the TAT models: k intervals, rounded up to whole µs
		return (k*p.Num + p.Den - 1) / p.Den
	}
}

func TestRefundCreditsNothingTwice(t *testing.T) {
	forEach(t, func(t *testing.T, m algo.Model, p algo.Params, sc scenario) {
		c := capOf(m, p)
		for _, k := range []int64{1, c / 3, c} {
			r, pre := check(m, p, cloneState(sc.s), sc.now, k)
			if k == 0 || !r.Allowed {
				continue
			}
			pre = cloneState(pre)
			charged, _ := charge(m, p, cloneState(pre), sc.now, k)
			refill := refillTime(m, p, k)
			for _, d := range []int64{0, 1, refill / 3, refill - 1, refill, refill + 1, refill + p.Window} {
				if d < 0 {
					continue
				}
				at := sc.now + d
				refunded, _ := refund(m, p, cloneState(charged), at, k, sc.now)
				for _, e := range []int64{0, 1, p.Window / 3, refill} {
					for _, q := range costs(c) {
						ch, _ := check(m, p, charged, at+e, q)
						un, _ := check(m, p, pre, at+e, q)
						got, _ := check(m, p, refunded, at+e, q)
						if d >= refill && got != ch {
							t.Fatalf("charge of %d refunded after %dµs, when time had given it back: cost %d at +%d: %+v; want %+v as without the refund", k, d, q, e, got, ch)
						}
						// Remaining reads the state only at cost 0 (else it counts the request when
						// allowed); Allowed must sit between the two at every cost.
						if q == 0 && (got.Remaining < ch.Remaining || got.Remaining > un.Remaining) ||
							ch.Allowed && !got.Allowed || got.Allowed && !un.Allowed {
							t.Fatalf("charge of %d refunded after %dµs: cost %d at +%d: %+v; want between %+v (charged) and %+v (never charged)", k, d, q, e, got, ch, un)
						}
					}
				}
			}
		}
	})
}

// TestTraits: UsesBurst exactly for the TAT family, Shapes only for the shaping leaky bucket.
func TestTraits(t *testing.T) {
	for _, n := range registered(t) {
		_, isTAT := n.m.(*tat)
		if n.m.UsesBurst() != isTAT {
			t.Errorf("%s: UsesBurst %v; want %v", n.name, n.m.UsesBurst(), isTAT)
		}
		wantShapes := n.a == Algorithm(LeakyBucket{Shaping: true})
		if n.m.Shapes() != wantShapes {
			t.Errorf("%s: Shapes %v; want %v", n.name, n.m.Shapes(), wantShapes)
		}
	}
	tatNames := []string{}
	for _, n := range registered(t) {
		if n.m.UsesBurst() {
			tatNames = append(tatNames, n.name)
		}
	}
	slices.Sort(tatNames)
	if want := []string{"gcra", "leaky_bucket", "leaky_bucket_shaping", "token_bucket"}; !slices.Equal(tatNames, want) {
		t.Errorf("algorithms using a burst: %v; want %v", tatNames, want)
	}
}

func TestValidate(t *testing.T) {
	const day = 24 * 3600 * 1_000_000
	const prime = 99_991 // prime: the interval 366 days/prime does not reduce
	cases := []struct {
		name string
		p    algo.Params
		tat  bool // the TAT models accept it
		log  bool // the sliding log accepts it
	}{
		{"1e9 per second, burst 1e9", algo.NewParams(1_000_000_000, 1_000_000, 1_000_000_000), true, false},
		{"700k per second", algo.NewParams(700_000, 1_000_000, 0), true, false},
		{"burst 2^40 over 366 days at a prime limit", algo.NewParams(prime, 366*day, 1<<40), false, false},
		{"limit 2^40 over 366 days", algo.NewParams(1<<40, 366*day, 0), false, false}, // 2^40 × 366 days/2^14
		{"burst 284 at 1000003 per 366 days", algo.NewParams(1_000_003, 366*day, 284), true, false},
		{"burst 285 at 1000003 per 366 days", algo.NewParams(1_000_003, 366*day, 285), false, false}, // 285 × 3.16e13 > 2^53
		{"burst 100 at 1 per 366 days (drains for 100 years)", algo.NewParams(1, 366*day, 100), false, true},
		{"burst 2^33 over 366 days at a prime limit", algo.NewParams(prime, 366*day, 1<<33), false, false},
		{"burst 2^40 at 1 per 366 days (drains for 2^40 years)", algo.NewParams(1, 366*day, 1<<40), false, true},
		{"one a year, burst 10", algo.NewParams(1, 366*day, 10), true, true},
		{"log limit 1000", algo.NewParams(1_000, 1_000_000, 0), true, true},
		{"log limit 1001", algo.NewParams(1_001, 1_000_000, 0), true, false},
	}
	for _, c := range cases {
		for _, n := range registered(t) {
			err := n.m.Validate(c.p)
			var want bool
			switch {
			case n.m.UsesBurst():
				want = c.tat
			case n.m.Code() == "sl" || n.m.Code() == "if":
				want = c.log
			default:
				want = true // the windows count in exact integers: nothing to refuse
			}
			if (err == nil) != want {
				t.Errorf("%s: %s (%s): Validate = %v; want accepted %v", n.name, c.name, pstr(c.p), err, want)
			}
		}
	}
}

// TestValidatedStaysExact: at the edge of what the TAT models accept, the arithmetic stays
// below 2^53 and exact: a full charge, its drain and a denial are exactly as the rate says.
func TestValidatedStaysExact(t *testing.T) {
	const day = 24 * 3600 * 1_000_000
	m := &tat{code: "gc"}
	for _, p := range []algo.Params{
		algo.NewParams(1_000_003, 366*day, 284), // Burst × Num just below 2^53
		algo.NewParams(1_000_000_000, 1_000_000, 1_000_000_000),
		algo.NewParams(700_000, 1_000_000, 0),
		algo.NewParams(1, 366*day, 35), // drains in just under 2^50 µs
	} {
		if err := m.Validate(p); err != nil {
			t.Fatalf("%s: %v", pstr(p), err)
		}
		c := p.Capacity()
		if c*p.Num+p.Den >= algo.Exact {
			t.Fatalf("%s: Burst×Num %d is beyond 2^53 yet accepted", pstr(p), c*p.Num)
		}
		s, ttl := mustCharge(t, m, p, algo.State{}, t0, c)
		drain := (c*p.Num + p.Den - 1) / p.Den
		if ttl != drain {
			t.Errorf("%s: a full charge lives %dµs; want %d", pstr(p), ttl, drain)
		}
		r, _ := check(m, p, s, t0, 1)
		if wait := (p.Num + p.Den - 1) / p.Den; r.Allowed || r.RetryAfter != wait {
			t.Errorf("%s: one more unit: %+v; want denied, RetryAfter %d", pstr(p), r, wait)
		}
		r, _ = check(m, p, s, t0+drain, c)
		if !r.Allowed || r.Remaining != 0 {
			t.Errorf("%s: the whole capacity again after %dµs: %+v; want allowed", pstr(p), drain, r)
		}
	}
}

// step is one request in a table: at t0+At, cost Cost, charged when allowed unless Peek.
type step struct {
	At, Cost int64
	Peek     bool
	Want     algo.Result
}

func runSteps(t *testing.T, m algo.Model, p algo.Params, steps []step) {
	t.Helper()
	var s algo.State
	for i, st := range steps {
		r, ns := check(m, p, s, t0+st.At, st.Cost)
		r.Next = 0 // held to its definition by checkNext (TestInvariantsRandom)
		if r != st.Want {
			t.Errorf("%s %s: step %d (cost %d at t0+%d): %+v; want %+v", m.Code(), pstr(p), i, st.Cost, st.At, r, st.Want)
		}
		if r.Allowed && !st.Peek {
			s, _ = charge(m, p, ns, t0+st.At, st.Cost)
		} else {
			s = ns
		}
	}
}

func TestExactRates(t *testing.T) {
	type res = algo.Result
	for _, code := range []string{"gc", "tb", "lb", "ls"} {
		var m algo.Model
		for _, n := range registered(t) {
			if n.m.Code() == code {
				m = n.m
			}
		}
		if m == nil {
			t.Errorf("no registered algorithm has code %q", code)
			continue
		}
		delay := func(d int64) int64 {
			if m.Shapes() {
				return d
			}
			return 0
		}
		t.Run(code+"/700k", func(t *testing.T) {
			p := algo.NewParams(700_000, 1_000_000, 0)
			if p.Num != 10 || p.Den != 7 {
				t.Fatalf("interval %d/%d; want 10/7", p.Num, p.Den)
			}
			runSteps(t, m, p, []step{
				{At: 0, Cost: 700_000, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1_000_000}},
				{At: 999_999, Cost: 700_000, Want: res{Remaining: 699_999, ResetAfter: 1, RetryAfter: 1}},
				{At: 999_999, Cost: 0, Want: res{Allowed: true, Remaining: 699_999, ResetAfter: 1}},
				{At: 1_000_000, Cost: 700_000, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1_000_000}},
				// 7 units take 10µs exactly.
				{At: 2_000_000, Cost: 0, Want: res{Allowed: true, Remaining: 700_000}},
				{At: 2_000_000, Cost: 700_000, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1_000_000}},
				{At: 2_000_009, Cost: 7, Want: res{Remaining: 6, ResetAfter: 999_991, RetryAfter: 1}},
				{At: 2_000_010, Cost: 7, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1_000_000, Delay: delay(999_990)}},
			})
		})
		t.Run(code+"/300k", func(t *testing.T) {
			p := algo.NewParams(300_000, 1_000_000, 0)
			if p.Num != 10 || p.Den != 3 {
				t.Fatalf("interval %d/%d; want 10/3", p.Num, p.Den)
			}
			runSteps(t, m, p, []step{
				{At: 0, Cost: 1, Peek: true, Want: res{Allowed: true, Remaining: 299_999, ResetAfter: 4}}, // 10/3 rounded up
				{At: 0, Cost: 300_000, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1_000_000}},
				// One more unit needs 10/3 µs: 4 whole µs.
				{At: 0, Cost: 1, Want: res{Remaining: 0, ResetAfter: 1_000_000, RetryAfter: 4}},
				{At: 3, Cost: 1, Want: res{Remaining: 0, ResetAfter: 999_997, RetryAfter: 1}},
				{At: 3, Cost: 0, Want: res{Allowed: true, Remaining: 0, ResetAfter: 999_997}},
				{At: 4, Cost: 1, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1_000_000, Delay: delay(999_996)}}, // TAT t0+1000003⅓
				// At +7 the TAT is 3⅔ µs behind the horizon: one unit (not 1.1).
				{At: 7, Cost: 0, Want: res{Allowed: true, Remaining: 1, ResetAfter: 999_997}},
				{At: 7, Cost: 2, Want: res{Remaining: 1, ResetAfter: 999_997, RetryAfter: 3}}, // 6⅔ - 3⅔
				{At: 10, Cost: 2, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1_000_000, Delay: delay(999_994)}},
				{At: 1_000_010, Cost: 0, Want: res{Allowed: true, Remaining: 300_000}},
				{At: 1_999_999, Cost: 0, Want: res{Allowed: true, Remaining: 300_000}},
			})
			// Draining a full bucket: after d µs exactly floor(3d/10) units are back.
			s, _ := mustCharge(t, m, p, algo.State{}, t0, 300_000)
			for _, d := range []int64{1, 3, 4, 7, 10, 333, 999_999, 1_000_000} {
				r, _ := check(m, p, s, t0+d, 0)
				if want := min(3*d/10, 300_000); r.Remaining != want {
					t.Errorf("%dµs after a full charge: Remaining %d; want %d", d, r.Remaining, want)
				}
			}
		})
		t.Run(code+"/1e9-bytes", func(t *testing.T) {
			p := algo.NewParams(1_000_000_000, 1_000_000, 1_000_000_000)
			runSteps(t, m, p, []step{
				{At: 0, Cost: 1_000_000_000, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1_000_000}},
				{At: 999_999, Cost: 0, Want: res{Allowed: true, Remaining: 999_999_000, ResetAfter: 1}},
				{At: 999_999, Cost: 1_000_000_000, Want: res{Remaining: 999_999_000, ResetAfter: 1, RetryAfter: 1}},
				{At: 999_999, Cost: 999_999_001, Want: res{Remaining: 999_999_000, ResetAfter: 1, RetryAfter: 1}},
				{At: 999_999, Cost: 999_999_000, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1_000_000, Delay: delay(1)}},
			})
		})
	}
}

func TestShapingDelays(t *testing.T) {
	type res = algo.Result
	p := algo.NewParams(10, 1_000_000, 0) // one slot every 100ms, 10 slots
	var steps []step
	for i := int64(0); i < 10; i++ {
		steps = append(steps, step{At: 0, Cost: 1, Want: res{Allowed: true, Remaining: 9 - i, ResetAfter: (i + 1) * 100_000, Delay: i * 100_000}})
	}
	steps = append(steps,
		step{At: 0, Cost: 1, Want: res{Remaining: 0, ResetAfter: 1_000_000, RetryAfter: 100_000}},
		step{At: 150_000, Cost: 1, Want: res{Allowed: true, Remaining: 0, ResetAfter: 950_000, Delay: 850_000}},
		step{At: 150_000, Cost: 1, Want: res{Remaining: 0, ResetAfter: 950_000, RetryAfter: 50_000}},
	)
	runSteps(t, &tat{code: "ls", shaping: true}, p, steps)
	// Policing admits the same, without delay.
	for i := range steps {
		steps[i].Want.Delay = 0
	}
	runSteps(t, &tat{code: "lb"}, p, steps)
}

func TestFixedWindowTable(t *testing.T) {
	type res = algo.Result
	runSteps(t, fixedWindow{}, algo.NewParams(3, 1_000, 0), []step{
		{At: 0, Cost: 0, Want: res{Allowed: true, Remaining: 3}},
		{At: 0, Cost: 1, Want: res{Allowed: true, Remaining: 2, ResetAfter: 1_000}},
		{At: 100, Cost: 2, Want: res{Allowed: true, Remaining: 0, ResetAfter: 900}},
		{At: 500, Cost: 1, Want: res{Remaining: 0, ResetAfter: 500, RetryAfter: 500}},
		{At: 999, Cost: 1, Want: res{Remaining: 0, ResetAfter: 1, RetryAfter: 1}},
		{At: 999, Cost: 4, Want: res{Remaining: 0, ResetAfter: 1, RetryAfter: algo.Never}},
		{At: 1_000, Cost: 3, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1_000}}, // a new window
		{At: 1_999, Cost: 0, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1}},
		{At: 5_500, Cost: 0, Want: res{Allowed: true, Remaining: 3}},
	})
}

func TestSlidingLogTable(t *testing.T) {
	type res = algo.Result
	runSteps(t, slidingLog{}, algo.NewParams(3, 1_000, 0), []step{
		{At: 0, Cost: 1, Want: res{Allowed: true, Remaining: 2, ResetAfter: 1_000}},
		{At: 100, Cost: 1, Want: res{Allowed: true, Remaining: 1, ResetAfter: 1_000}},
		{At: 200, Cost: 1, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1_000}},
		{At: 300, Cost: 1, Want: res{Remaining: 0, ResetAfter: 900, RetryAfter: 700}},
		{At: 300, Cost: 2, Want: res{Remaining: 0, ResetAfter: 900, RetryAfter: 800}},
		{At: 300, Cost: 3, Want: res{Remaining: 0, ResetAfter: 900, RetryAfter: 900}},
		{At: 999, Cost: 1, Want: res{Remaining: 0, ResetAfter: 201, RetryAfter: 1}},
		{At: 1_000, Cost: 1, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1_000}},
		{At: 1_100, Cost: 0, Want: res{Allowed: true, Remaining: 1, ResetAfter: 900}},
		{At: 3_000, Cost: 0, Want: res{Allowed: true, Remaining: 3}},
	})
}

func TestSlidingCounterTable(t *testing.T) {
	type res = algo.Result
	runSteps(t, slidingCounter{}, algo.NewParams(10, 1_000, 0), []step{
		{At: 0, Cost: 10, Want: res{Allowed: true, Remaining: 0, ResetAfter: 2_000}},
		{At: 1_000, Cost: 1, Want: res{Remaining: 0, ResetAfter: 1_000, RetryAfter: 100}}, // 10×(1−f)+1 ≤ 10 at f = 0.1
		{At: 1_099, Cost: 1, Want: res{Remaining: 0, ResetAfter: 901, RetryAfter: 1}},
		{At: 1_100, Cost: 0, Want: res{Allowed: true, Remaining: 1, ResetAfter: 900}},
		{At: 1_500, Cost: 0, Want: res{Allowed: true, Remaining: 5, ResetAfter: 500}},
		{At: 1_500, Cost: 6, Want: res{Remaining: 5, ResetAfter: 500, RetryAfter: 100}},
		{At: 1_500, Cost: 5, Want: res{Allowed: true, Remaining: 0, ResetAfter: 1_500}},
		// Window 2: previous = 5, so 10 − 5×(1−f) ≥ 10 only at f = 1: in window 3.
		{At: 2_000, Cost: 10, Want: res{Remaining: 5, ResetAfter: 1_000, RetryAfter: 1_000}},
		{At: 4_000, Cost: 0, Want: res{Allowed: true, Remaining: 10}},
	})
}

func TestNames(t *testing.T) {
	want := map[Algorithm]string{
		FixedWindow{}:              "fixed_window",
		SlidingLog{}:               "sliding_window_log",
		SlidingCounter{}:           "sliding_window_counter",
		TokenBucket{}:              "token_bucket",
		LeakyBucket{}:              "leaky_bucket",
		LeakyBucket{Shaping: true}: "leaky_bucket_shaping",
		GCRA{}:                     "gcra",
		InFlight{}:                 "in_flight",
	}
	for a, name := range want {
		if a.Name() != name {
			t.Errorf("%#v.Name() = %q; want %q", a, a.Name(), name)
		}
	}
	if len(all) != len(want) {
		t.Errorf("all has %d algorithms; want %d", len(all), len(want))
	}
}

func TestRegistryAgreesWithAll(t *testing.T) {
	models := algo.All()
	if len(models) != len(all) {
		t.Fatalf("algo.All() has %d models, all has %d algorithms", len(models), len(all))
	}
	codes, names := map[string]string{}, map[string]bool{}
	for _, a := range all {
		m := algo.Of(a)
		if m == nil {
			t.Fatalf("%#v has no model", a)
		}
		if m != a.model() {
			t.Errorf("%#v: registered model %#v, its model() is %#v", a, m, a.model())
		}
		if other, dup := codes[m.Code()]; dup {
			t.Errorf("code %q of %s is also the code of %s", m.Code(), a.Name(), other)
		}
		codes[m.Code()] = a.Name()
		if names[a.Name()] {
			t.Errorf("name %q twice", a.Name())
		}
		names[a.Name()] = true
		if !slices.Contains(models, m) {
			t.Errorf("%s: its model is not in algo.All()", a.Name())
		}
	}
	for _, m := range models {
		if _, ok := codes[m.Code()]; !ok {
			t.Errorf("algo.All() has model %q that no algorithm of all has", m.Code())
		}
	}
	if !slices.IsSortedFunc(models, func(a, b algo.Model) int {
		return cmpString(a.Code(), b.Code())
	}) {
		t.Errorf("algo.All() is not ordered by code")
	}
	// Values that are not algorithms of this package have no model.
	for _, v := range []any{nil, 0, "gcra", struct{}{}, fmt.Stringer(nil)} {
		if algo.Of(v) != nil {
			t.Errorf("algo.Of(%#v) has a model", v)
		}
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
