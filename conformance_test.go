package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/calendar"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// step is one request of the conformance table: advance the clock, send a request of cost, and
// expect this decision.
type step struct {
	advance   time.Duration
	cost      int64
	allowed   bool
	remaining int64
	retry     time.Duration
	reset     time.Duration
	delay     time.Duration
}

const ms = time.Millisecond

// meterSteps is the table of GCRA, the token bucket and the policing leaky bucket at 3 per 3 s:
// the three keep different state but admit the same requests and report the same numbers.
var meterSteps = []step{
	{0, 1, true, 2, 0, 1 * time.Second, 0},
	{0, 1, true, 1, 0, 2 * time.Second, 0},
	{0, 1, true, 0, 0, 3 * time.Second, 0},
	{0, 1, false, 0, time.Second, 3 * time.Second, 0},      // burst spent: next slot in 1 s
	{500 * ms, 1, false, 0, 500 * ms, 2500 * ms, 0},        // half way to it
	{500 * ms, 1, true, 0, 0, 3 * time.Second, 0},          // the slot came
	{0, 4, false, 0, algorithms.Never, 3 * time.Second, 0}, // above the burst: never
	{0, 0, true, 0, 0, 3 * time.Second, 0},                 // cost 0 reads
	{10 * time.Second, 2, true, 1, 0, 2 * time.Second, 0},  // long idle: fresh
	{0, 2, false, 1, time.Second, 2 * time.Second, 0},      // cost 2 with 1 left
}

// conformanceCase is one policy and its table: every row is a request; the comments give the
// state before it.
type conformanceCase struct {
	name   string
	policy ratelimit.Policy
	steps  []step
}

// exactRates are the meters' tables at rates whose emission interval is not a whole number of
// microseconds: 300,000/s (10/3 µs), 700,000/s (10/7 µs), and a bandwidth of 10^9 bytes/s with
// the cost in bytes (1/1000 µs). Each admits exactly its rate: a full second's worth after a
// second, not one unit more.
var exactRates = []struct {
	name   string
	policy ratelimit.Policy
	steps  []step
}{
	{"300k_per_s", ratelimit.Policy{Limit: 300_000, Window: time.Second}, []step{
		{0, 300_000, true, 0, 0, time.Second, 0},
		{500 * ms, 150_000, true, 0, 0, time.Second, 0},        // half a second refills exactly half
		{0, 1, false, 0, 4 * time.Microsecond, time.Second, 0}, // the next unit is 3⅓ µs away
		{4 * time.Microsecond, 1, true, 0, 0, time.Second, 0},
		{time.Second, 0, true, 300_000, 0, 0, 0},
	}},
	{"700k_per_s", ratelimit.Policy{Limit: 700_000, Window: time.Second}, []step{
		{0, 700_000, true, 0, 0, time.Second, 0},
		{time.Second - time.Microsecond, 700_000, false, 699_999, time.Microsecond, time.Microsecond, 0},
		{time.Microsecond, 700_000, true, 0, 0, time.Second, 0}, // a second later: exactly 700,000
		{0, 1, false, 0, 2 * time.Microsecond, time.Second, 0},  // 10/7 µs, rounded up
		{time.Second, 700_001, false, 700_000, algorithms.Never, 0, 0},
	}},
	{"1e9_bytes_per_s", ratelimit.Policy{Limit: 1_000_000_000, Window: time.Second}, []step{
		{0, 1_000_000_000, true, 0, 0, time.Second, 0},
		{ms, 1_000_000, true, 0, 0, time.Second, 0}, // 1 ms refills a megabyte
		{0, 1, false, 0, time.Microsecond, time.Second, 0},
		{time.Microsecond, 1000, true, 0, 0, time.Second, 0}, // 1 µs refills a kilobyte
		{0, 0, true, 0, 0, time.Second, 0},
		{2 * time.Second, 0, true, 1_000_000_000, 0, 0, 0},
	}},
}

func init() {
	for _, m := range []algorithms.Algorithm{algorithms.GCRA{}, algorithms.TokenBucket{}, algorithms.LeakyBucket{}} {
		for _, r := range exactRates {
			p := r.policy
			p.Algorithm = m
			conformance = append(conformance, conformanceCase{m.Name() + "_" + r.name, p, r.steps})
		}
	}
}

var conformance = []conformanceCase{
	{"gcra", ratelimit.Policy{Limit: 3, Window: 3 * time.Second, Algorithm: algorithms.GCRA{}}, meterSteps},
	{"token_bucket", ratelimit.Policy{Limit: 3, Window: 3 * time.Second, Algorithm: algorithms.TokenBucket{}}, meterSteps},
	{"token_bucket_burst", ratelimit.Policy{Limit: 1, Window: time.Second, Burst: 5, Algorithm: algorithms.TokenBucket{}}, []step{
		{0, 5, true, 0, 0, 5 * time.Second, 0},
		{0, 1, false, 0, time.Second, 5 * time.Second, 0},
		{2500 * ms, 2, true, 0, 0, 4500 * ms, 0}, // 2 tokens back, the half is kept
		{500 * ms, 1, true, 0, 0, 5 * time.Second, 0},
	}},
	{"leaky_bucket", ratelimit.Policy{Limit: 3, Window: 3 * time.Second, Algorithm: algorithms.LeakyBucket{}}, meterSteps},
	{"leaky_bucket_shaping", ratelimit.Policy{Limit: 3, Window: 3 * time.Second, Algorithm: algorithms.LeakyBucket{Shaping: true}}, []step{
		{0, 1, true, 2, 0, 1 * time.Second, 0},
		{0, 1, true, 1, 0, 2 * time.Second, time.Second}, // queued behind the first
		{0, 1, true, 0, 0, 3 * time.Second, 2 * time.Second},
		{0, 1, false, 0, time.Second, 3 * time.Second, 0}, // the queue is full
		{500 * ms, 1, false, 0, 500 * ms, 2500 * ms, 0},
		{500 * ms, 1, true, 0, 0, 3 * time.Second, 2 * time.Second},
		{0, 4, false, 0, algorithms.Never, 3 * time.Second, 0},
		{0, 0, true, 0, 0, 3 * time.Second, 0},
		{10 * time.Second, 2, true, 1, 0, 2 * time.Second, 0},
		{0, 1, true, 0, 0, 3 * time.Second, 2 * time.Second},
	}},
	{"fixed_window", ratelimit.Policy{Limit: 3, Window: 3 * time.Second, Algorithm: algorithms.FixedWindow{}}, []step{
		{0, 1, true, 2, 0, 3 * time.Second, 0},
		{0, 1, true, 1, 0, 3 * time.Second, 0},
		{0, 1, true, 0, 0, 3 * time.Second, 0},
		{0, 1, false, 0, 3 * time.Second, 3 * time.Second, 0}, // until the window ends
		{500 * ms, 1, false, 0, 2500 * ms, 2500 * ms, 0},
		{500 * ms, 1, false, 0, 2 * time.Second, 2 * time.Second, 0},
		{0, 4, false, 0, algorithms.Never, 2 * time.Second, 0},
		{0, 0, true, 0, 0, 2 * time.Second, 0},
		{2 * time.Second, 1, true, 2, 0, 3 * time.Second, 0},  // the next window
		{10 * time.Second, 2, true, 1, 0, 2 * time.Second, 0}, // 1 s into a later window
	}},
	// A calendar policy: a daily billing cycle anchored 3 s after t0's time of day, so that
	// the cycle of t0 ends 3 s after it.
	{"calendar_day_cycle", ratelimit.Policy{Limit: 3, Period: &calendar.Period{Unit: calendar.Day, Zone: time.UTC, Anchor: t0.Add(3*time.Second - 24*time.Hour)}}, []step{
		{0, 1, true, 2, 0, 3 * time.Second, 0},
		{0, 1, true, 1, 0, 3 * time.Second, 0},
		{0, 1, true, 0, 0, 3 * time.Second, 0},
		{0, 1, false, 0, 3 * time.Second, 3 * time.Second, 0}, // until the cycle ends
		{500 * ms, 1, false, 0, 2500 * ms, 2500 * ms, 0},
		{0, 4, false, 0, algorithms.Never, 2500 * ms, 0},
		{0, 0, true, 0, 0, 2500 * ms, 0},
		{2500 * ms, 1, true, 2, 0, 24 * time.Hour, 0},                       // the next cycle, at its start
		{10 * time.Second, 2, true, 0, 0, 24*time.Hour - 10*time.Second, 0}, // 10 s into it
		{24 * time.Hour, 3, true, 0, 0, 24*time.Hour - 10*time.Second, 0},   // 10 s into the cycle after, fresh
	}},
	{"sliding_window_log", ratelimit.Policy{Limit: 3, Window: 3 * time.Second, Algorithm: algorithms.SlidingLog{}}, []step{
		{0, 1, true, 2, 0, 3 * time.Second, 0},
		{0, 1, true, 1, 0, 3 * time.Second, 0},
		{0, 1, true, 0, 0, 3 * time.Second, 0},
		{0, 1, false, 0, 3 * time.Second, 3 * time.Second, 0}, // until the oldest leaves
		{time.Second, 1, false, 0, 2 * time.Second, 2 * time.Second, 0},
		{2 * time.Second, 2, true, 1, 0, 3 * time.Second, 0}, // all three left
		{time.Second, 2, false, 1, 2 * time.Second, 2 * time.Second, 0},
		{0, 1, true, 0, 0, 3 * time.Second, 0},
		{0, 4, false, 0, algorithms.Never, 3 * time.Second, 0},
		{0, 0, true, 0, 0, 3 * time.Second, 0},
	}},
	{"sliding_window_counter", ratelimit.Policy{Limit: 4, Window: 4 * time.Second, Algorithm: algorithms.SlidingCounter{}}, []step{
		{0, 3, true, 1, 0, 8 * time.Second, 0},
		// 3 in this window; the next window weighs them by 1 - elapsed/4s, so 2 more fit
		// when 3·(1-e/4) ≤ 2, at e = 4/3 s into it.
		{0, 2, false, 1, 5333334 * time.Microsecond, 8 * time.Second, 0},
		{4 * time.Second, 1, true, 0, 0, 8 * time.Second, 0}, // estimate 3·1 + 1
		// 2 s in: estimate 3·0.5 + 1 = 2.5; 2 more fit when 3·(1-e/4) ≤ 1, at e = 8/3 s.
		{2 * time.Second, 2, false, 1, 666667 * time.Microsecond, 6 * time.Second, 0},
		{0, 1, true, 0, 0, 6 * time.Second, 0},
		{0, 5, false, 0, algorithms.Never, 6 * time.Second, 0},
		{0, 0, true, 0, 0, 6 * time.Second, 0},
		{20 * time.Second, 4, true, 0, 0, 6 * time.Second, 0}, // fresh, 2 s into a window
	}},
}

// TestConformance runs the table on every engine, and on the Redis store wrapped by a store
// written outside package ratelimit, which must not change a result.
func TestConformance(t *testing.T) {
	for _, e := range conformanceEngines() {
		t.Run(e.name, func(t *testing.T) {
			clock := newFakeClock()
			conform(t, e.store(t, ratelimit.WithClock(clock)), clock)
		})
	}
}

// conformanceEngines are the engines the tables run on: every engine, and the Redis store
// wrapped by a store written outside package ratelimit.
func conformanceEngines() []engine {
	wrapped := engine{"redis wrapped outside the package", func(t *testing.T, opts ...ratelimit.StoreOption) ratelimit.Store {
		c := &callCounter{next: redisStore(t, redistest.Standalone(t), optionsOf[ratelimit.RedisOption](opts)...)}
		t.Cleanup(func() {
			if c.checks.Load() == 0 {
				t.Error("the wrapping store saw no check")
			}
		})
		return c
	}}
	return append(engines[:len(engines):len(engines)], wrapped)
}

// conform runs the conformance table on store.
func conform(t *testing.T, store ratelimit.Store, clock *fakeClock) {
	for _, tc := range conformance {
		t.Run(tc.name, func(t *testing.T) {
			clock.Set(t0)
			l, err := ratelimit.New(store, tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			key := keyOf(t)
			for i, s := range tc.steps {
				clock.Advance(s.advance)
				d, err := l.AllowN(context.Background(), key, s.cost)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				got := step{s.advance, s.cost, d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter, d.Delay}
				if got != s {
					t.Errorf("step %d (+%v, cost %d):\n got allowed=%v remaining=%d retry=%v reset=%v delay=%v\nwant allowed=%v remaining=%d retry=%v reset=%v delay=%v",
						i, s.advance, s.cost, got.allowed, got.remaining, got.retry, got.reset, got.delay,
						s.allowed, s.remaining, s.retry, s.reset, s.delay)
				}
			}
		})
	}
}
