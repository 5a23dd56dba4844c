package algorithms

import (
	"fmt"
	"slices"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// t0 is a realistic time in microseconds (November 2023), a multiple of every window the
// table tests use, so that a fixed window starts at t0.
const t0 int64 = 1_699_999_200_000_000

// named is one public algorithm value with its registered model.
type named struct {
	name string
	a    Algorithm
	m    algo.Model
}

// registered returns every algorithm of `all` with its model from the registry.
func registered(t testing.TB) []named {
	t.Helper()
	out := make([]named, 0, len(all))
	for _, a := range all {
		m := algo.Of(a)
		if m == nil {
			t.Fatalf("algo.Of(%#v) = nil: the algorithm has no registered model", a)
		}
		out = append(out, named{a.Name(), a, m})
	}
	return out
}

// capOf is the largest cost a request can have under p: the burst for the rate-based
// algorithms, the limit for the others (which do not use a burst).
func capOf(m algo.Model, p algo.Params) int64 {
	if m.UsesBurst() {
		return p.Capacity()
	}
	return p.Limit
}

// paramSets are the parameters every model runs with in the table tests; those the model
// refuses (the sliding log above 1,000) are left out.
func paramSets(m algo.Model) []algo.Params {
	ps := []algo.Params{
		algo.NewParams(10, 1_000_000, 0),
		algo.NewParams(7, 1_000, 0),           // an interval of 1000/7 µs
		algo.NewParams(1, 60_000_000, 0),      // one a minute
		algo.NewParams(3, 10_000, 0),          // 10000/3 µs
		algo.NewParams(1000, 1_000, 0),        // one a microsecond
		algo.NewParams(300_000, 1_000_000, 0), // 10/3 µs
		algo.NewParams(700_000, 1_000_000, 0), // 10/7 µs
		algo.NewParams(1_000_000_000, 1_000_000, 0),
	}
	if m.UsesBurst() {
		ps = append(ps,
			algo.NewParams(10, 1_000_000, 25),
			algo.NewParams(10, 1_000_000, 3),
			algo.NewParams(300_000, 1_000_000, 1),
			algo.NewParams(3, 10_000, 1_000),
			algo.NewParams(1_000_000_000, 1_000_000, 1_000_000_000),
		)
	}
	out := ps[:0]
	for _, p := range ps {
		if m.Validate(p) == nil {
			out = append(out, p)
		}
	}
	return out
}

func pstr(p algo.Params) string {
	return fmt.Sprintf("%d/%dus,burst=%d", p.Limit, p.Window, p.Burst)
}

// mustCharge checks a request of cost at now and charges it; the request must be allowed.
func mustCharge(t testing.TB, m algo.Model, p algo.Params, s algo.State, now, cost int64) (algo.State, int64) {
	t.Helper()
	r, s := check(m, p, s, now, cost)
	if !r.Allowed {
		t.Fatalf("%s %s: setup: cost %d at %d denied: %+v", m.Code(), pstr(p), cost, now, r)
	}
	return charge(m, p, s, now, cost)
}

// scenario is a state and the time it is looked at.
type scenario struct {
	name string
	s    algo.State
	now  int64
}

// scenarios returns states a model may be in: fresh, partly and wholly used, and partly
// refilled.
func scenarios(t testing.TB, m algo.Model, p algo.Params) []scenario {
	t.Helper()
	c := capOf(m, p)
	out := []scenario{{"fresh", algo.State{}, t0}, {"fresh-mid-window", algo.State{}, t0 + p.Window/3}}
	if h := c / 2; h > 0 {
		s, _ := mustCharge(t, m, p, algo.State{}, t0, h)
		out = append(out, scenario{"half", s, t0})
		out = append(out, scenario{"half-later", s, t0 + p.Window/2})
	}
	full, _ := mustCharge(t, m, p, algo.State{}, t0, c)
	out = append(out, scenario{"full", full, t0})
	out = append(out, scenario{"full-1us-later", full, t0 + 1})
	out = append(out, scenario{"full-third-later", full, t0 + p.Window/3})
	out = append(out, scenario{"full-next-window", full, t0 + p.Window + p.Window/4})
	// A second charge in a later window on top of the first.
	if r, s := check(m, p, full, t0+p.Window+p.Window/2, 1); r.Allowed {
		s, _ = charge(m, p, s, t0+p.Window+p.Window/2, 1)
		out = append(out, scenario{"two-windows", s, t0 + p.Window + p.Window/2 + 1})
	}
	return out
}

// cloneState copies s, its log included.
func cloneState(s algo.State) algo.State {
	s.Log = slices.Clone(s.Log)
	return s
}

// costs returns the costs worth asking about under capacity c.
func costs(c int64) []int64 {
	out := []int64{0, 1, c / 2, c - 1, c, c + 1}
	slices.Sort(out)
	return slices.Compact(out)
}

// check, charge, refund and renew run one method of a model as a function of values: on a
// copy of s, returning the verdict or the time the state matters with the new state, and
// leaving s alone (but for the array of its Log, which the copy shares, as in the engines).
// The tests read best so; the engines pass pointers.
func check(m algo.Model, p algo.Params, s algo.State, now, cost int64) (algo.Result, algo.State) {
	var r algo.Result
	m.Check(&p, &s, now, cost, &r)
	return r, s
}

func charge(m algo.Model, p algo.Params, s algo.State, now, cost int64) (algo.State, int64) {
	ttl := m.Charge(&p, &s, now, cost)
	return s, ttl
}

func refund(m algo.Model, p algo.Params, s algo.State, now, cost, at int64) (algo.State, int64) {
	ttl := m.Refund(&p, &s, now, cost, at)
	return s, ttl
}

func renew(m algo.Renewer, p algo.Params, s algo.State, now, cost, at int64) (algo.State, int64) {
	ttl := m.Renew(&p, &s, now, cost, at)
	return s, ttl
}
