package algorithms

import (
	"math/rand/v2"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// A TAT written under one limit and read under another (the same window) is the same time, or
// when its fraction of a microsecond has another denominator, the next whole microsecond: never
// earlier, so a changed limit forgives nothing, and less than a microsecond later.
func TestTATReadUnderAnotherLimit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := &tat{code: "gc"}
	fractions := 0
	for run := 0; run < 3000; run++ {
		p := randomParams(rng, m)
		if m.Validate(p) != nil {
			continue
		}
		now := t0 + rng.Int64N(p.Window)
		s, _ := charge(m, p, algo.State{Init: true, A: now}, now, logUniform(rng, 1, p.Capacity()))
		if s.B > 0 != (s.C == p.Den) || s.B < 0 || s.B >= max(s.C, 1) {
			t.Fatalf("%s: state %+v: a fraction must come with its denominator %d, and fit it", pstr(p), s, p.Den)
		}
		q := changeLimit(rng, m, p)
		got := instantOf(&q, &s)
		switch {
		case s.B == 0 || s.C == q.Den:
			if got != (instant{s.A, s.B}) {
				t.Fatalf("%s read under %s: %+v; want it as written, %+v", pstr(p), pstr(q), got, s)
			}
		case got != instant{s.A + 1, 0}:
			t.Fatalf("%s read under %s (denominator %d, written %d): %+v; want the next whole µs, %d", pstr(p), pstr(q), q.Den, s.C, got, s.A+1)
		default:
			fractions++
		}
	}
	if fractions < 100 {
		t.Errorf("only %d reads of a fraction under another denominator", fractions)
	}
}
