package algorithms

import (
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// An in-flight limit holds its slots until they are given back, or for a lifetime (the Window)
// after they were taken or last renewed.
func TestInFlightSlotLifetimes(t *testing.T) {
	m := algo.Of(InFlight{}).(algo.Renewer)
	p := algo.NewParams(2, 1_000_000, 0) // 2 slots, a lifetime of 1 s
	free := func(s algo.State, now int64) int64 {
		r, _ := check(m, p, cloneState(s), now, 0)
		return r.Remaining
	}
	take := func(s algo.State, now int64) algo.State {
		t.Helper()
		r, s := check(m, p, s, now, 1)
		if !r.Allowed {
			t.Fatalf("no slot at %d: %+v", now-t0, r)
		}
		s, _ = charge(m, p, s, now, 1)
		return s
	}
	s := take(take(algo.State{}, t0), t0+10)
	if r, _ := check(m, p, cloneState(s), t0+20, 1); r.Allowed || r.RetryAfter != 1_000_000-20 {
		t.Fatalf("a third request with both slots taken: %+v; want refused until the first slot's lifetime ends", r)
	}

	// Given back: free at once.
	back, _ := refund(m, p, cloneState(s), t0+30, 1, t0+10)
	if n := free(back, t0+30); n != 1 {
		t.Errorf("after one release: %d free; want 1", n)
	}

	// Renewed at +0.9 s: the slot taken at 0 outlives its first lifetime, the other does not.
	renewed, ttl := renew(m, p, cloneState(s), t0+900_000, 1, t0)
	if ttl != 1_000_000 {
		t.Errorf("renewed slot matters for %dµs; want the lifetime, 1000000", ttl)
	}
	if n := free(renewed, t0+1_000_010); n != 1 {
		t.Errorf("past the second slot's lifetime: %d free; want 1 (the renewed one is held)", n)
	}
	if n := free(renewed, t0+1_900_000); n != 2 {
		t.Errorf("past the renewed lifetime: %d free; want 2", n)
	}

	// A slot renewed after its lifetime ended is taken again: its request still runs.
	late, _ := renew(m, p, cloneState(s), t0+5_000_000, 1, t0)
	if n := free(late, t0+5_000_000); n != 1 {
		t.Errorf("a slot renewed after its lifetime: %d free; want 1", n)
	}
	// Renewing takes a slot even when the others hold them all: it was held already.
	full := take(take(algo.State{}, t0+5_000_000), t0+5_000_001)
	over, _ := renew(m, p, full, t0+5_000_002, 1, t0)
	if n := free(over, t0+5_000_002); n != 0 {
		t.Errorf("renewing into a full limit: %d free; want 0", n)
	}
	// Three requests run: one given back leaves the two slots taken.
	if back, _ := refund(m, p, cloneState(over), t0+5_000_003, 1, t0+5_000_000); free(back, t0+5_000_003) != 0 {
		t.Errorf("three held, one given back: %d free; want 0 (two still run)", free(back, t0+5_000_003))
	}
}
