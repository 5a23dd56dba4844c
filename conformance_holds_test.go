package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// holdOp is what a row of the reservations' table does.
type holdOp int

const (
	opAllow   holdOp = iota // AllowN of the row's cost
	opReserve               // Reserve of the row's cost, the estimate
	opSettle                // Settle of row of's reservation at the row's cost, then AllowN of 0
)

// holdStep is one row of the reservations' table: its call, and the decision expected (for a
// settle, that of a check of cost 0 after it, which reads the state the settle left).
type holdStep struct {
	op holdOp
	of int // opSettle: the row whose reservation it settles
	step
}

// windowHoldSteps is the reservations' table of the fixed window at 10 per 10 s; its first
// five rows are the sliding log's too (every charge made in the first second).
var windowHoldSteps = []holdStep{
	{opReserve, 0, step{0, 4, true, 6, 0, 10 * time.Second, 0}},
	{opReserve, 0, step{0, 4, true, 2, 0, 10 * time.Second, 0}},
	{opReserve, 0, step{0, 4, false, 2, 10 * time.Second, 10 * time.Second, 0}}, // 8 held: 4 more do not fit
	{opAllow, 0, step{0, 1, true, 1, 0, 10 * time.Second, 0}},
	{opSettle, 0, step{time.Second, 1, true, 4, 0, 9 * time.Second, 0}},       // 3 given back
	{opSettle, 1, step{0, 7, true, 1, 0, 9 * time.Second, 0}},                 // 3 more charged
	{opReserve, 0, step{0, 9, false, 1, 9 * time.Second, 9 * time.Second, 0}}, // holds 5
	{opReserve, 0, step{9 * time.Second, 5, true, 5, 0, 10 * time.Second, 0}}, // the next window
	{opSettle, 7, step{0, 12, true, 0, 0, 10 * time.Second, 0}},               // 12 of 10 charged
	{opAllow, 0, step{0, 1, false, 0, 10 * time.Second, 10 * time.Second, 0}},
}

// meterHoldSteps is the reservations' table of GCRA, the token bucket and the policing leaky
// bucket at 10 per 10 s (a unit a second): the TAT after each row is in its comment.
var meterHoldSteps = []holdStep{
	{opReserve, 0, step{0, 4, true, 6, 0, 4 * time.Second, 0}},                // 4 s
	{opReserve, 0, step{0, 4, true, 2, 0, 8 * time.Second, 0}},                // 8 s
	{opReserve, 0, step{0, 4, false, 2, 2 * time.Second, 8 * time.Second, 0}}, // does not fit
	{opAllow, 0, step{0, 1, true, 1, 0, 9 * time.Second, 0}},                  // 9 s
	// A second on, row 0 settles at 1: the 3 it gives back are the tail of its charge, from
	// 1 s to 4 s, which time has not used yet (it used the second the actual took): all 3
	// come back, as a window gives them back, and the TAT is 6 s.
	{opSettle, 0, step{time.Second, 1, true, 5, 0, 5 * time.Second, 0}},
	{opSettle, 1, step{0, 7, true, 2, 0, 8 * time.Second, 0}},                 // 3 more: 9 s
	{opReserve, 0, step{0, 9, false, 2, 3 * time.Second, 8 * time.Second, 0}}, // holds 5: does not fit
	{opReserve, 0, step{4 * time.Second, 5, true, 1, 0, 9 * time.Second, 0}},  // at 5 s: 14 s
	{opSettle, 7, step{0, 15, true, 0, 0, 19 * time.Second, 0}},               // 10 more, an overdraft: 24 s
	{opAllow, 0, step{0, 1, false, 0, 10 * time.Second, 19 * time.Second, 0}},
}

// holdConformance are the tables of Reserve and Settle, every policy at 10 per 10 s: what
// holds admit, the estimate clamped to half the capacity (5), a settle below the estimate
// (given back) and above it (an overdraft, charged beyond the limit), and a hold that
// outlives its lifetime (the window, 10 s) given back by the next reservation.
var holdConformance = []struct {
	name   string
	policy ratelimit.Policy
	steps  []holdStep
}{
	{"fixed_window", ratelimit.Policy{Limit: 10, Window: 10 * time.Second, Algorithm: algorithms.FixedWindow{}}, windowHoldSteps},
	{"sliding_window_log", ratelimit.Policy{Limit: 10, Window: 10 * time.Second, Algorithm: algorithms.SlidingLog{}}, append(windowHoldSteps[:5:5],
		holdStep{opSettle, 1, step{0, 7, true, 1, 0, 10 * time.Second, 0}},                 // 3 more, at 1 s
		holdStep{opReserve, 0, step{0, 9, false, 1, 9 * time.Second, 10 * time.Second, 0}}, // holds 5: the 6 of 0 s leave at 10 s
		holdStep{opReserve, 0, step{9 * time.Second, 5, true, 2, 0, 10 * time.Second, 0}},  // the 3 of 1 s weigh
		holdStep{opSettle, 7, step{0, 12, true, 0, 0, 10 * time.Second, 0}},                // 7 more: 15 of 10
		holdStep{opAllow, 0, step{0, 1, false, 0, 10 * time.Second, 10 * time.Second, 0}},  // 12 weigh after 11 s
	)},
	{"sliding_window_counter", ratelimit.Policy{Limit: 10, Window: 10 * time.Second, Algorithm: algorithms.SlidingCounter{}}, []holdStep{
		{opReserve, 0, step{0, 4, true, 6, 0, 20 * time.Second, 0}},
		{opReserve, 0, step{0, 4, true, 2, 0, 20 * time.Second, 0}},
		{opSettle, 0, step{0, 2, true, 4, 0, 20 * time.Second, 0}},
		// Row 1's hold is never settled; its lifetime ends with the window, and the next
		// reservation gives it back: the previous window weighs the 2 settled alone.
		{opReserve, 0, step{10*time.Second + time.Microsecond, 1, true, 7, 0, 20*time.Second - time.Microsecond, 0}},
	}},
	{"gcra", ratelimit.Policy{Limit: 10, Window: 10 * time.Second, Algorithm: algorithms.GCRA{}}, meterHoldSteps},
	{"token_bucket", ratelimit.Policy{Limit: 10, Window: 10 * time.Second, Algorithm: algorithms.TokenBucket{}}, meterHoldSteps},
	{"leaky_bucket", ratelimit.Policy{Limit: 10, Window: 10 * time.Second, Algorithm: algorithms.LeakyBucket{}}, meterHoldSteps},
}

// TestConformanceHolds runs the reservations' tables on every engine of the conformance table.
func TestConformanceHolds(t *testing.T) {
	for _, e := range conformanceEngines() {
		if e.name == "redis wrapped outside the package" {
			continue // a wrapper keeps no holds, and Reserve refuses it (TestReserveOverAWrapperStore)
		}
		t.Run(e.name, func(t *testing.T) {
			clock := newFakeClock()
			store := e.store(t, ratelimit.WithClock(clock))
			for _, tc := range holdConformance {
				t.Run(tc.name, func(t *testing.T) {
					clock.Set(t0)
					l := mustNew(t, store, tc.policy)
					key := keyOf(t)
					decisions := make([]ratelimit.Decision, len(tc.steps))
					for i, s := range tc.steps {
						clock.Advance(s.advance)
						var (
							d   ratelimit.Decision
							err error
						)
						switch s.op {
						case opAllow:
							d, err = l.AllowN(context.Background(), key, s.cost)
						case opReserve:
							d, err = l.Reserve(context.Background(), key, s.cost)
						case opSettle:
							if err = l.Settle(context.Background(), key, decisions[s.of], s.cost); err == nil {
								d, err = l.AllowN(context.Background(), key, 0)
							}
						}
						if err != nil {
							t.Fatalf("row %d: %v", i, err)
						}
						decisions[i] = d
						got := step{s.advance, s.cost, d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter, d.Delay}
						if got != s.step {
							t.Errorf("row %d (op %d, +%v, cost %d):\n got allowed=%v remaining=%d retry=%v reset=%v\nwant allowed=%v remaining=%d retry=%v reset=%v",
								i, s.op, s.advance, s.cost, got.allowed, got.remaining, got.retry, got.reset, s.allowed, s.remaining, s.retry, s.reset)
						}
					}
				})
			}
		})
	}
}
