package ratelimit_test

import (
	"slices"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// afterChange is what a changed policy admits: the remaining it reads, that many admitted at
// once, and then a request of cost 1 refused for retry, and admitted once retry has passed.
type afterChange struct {
	remaining int64
	retry     time.Duration
}

// shaping is the leaky bucket that shapes.
var shaping algorithms.Algorithm = algorithms.LeakyBucket{Shaping: true}

// forEachAlgorithm runs f once per engine and algorithm, each with the clock at t0 and a key of
// its own.
func forEachAlgorithm(t *testing.T, f func(t *testing.T, store ratelimit.Store, clock *fakeClock, alg algorithms.Algorithm, key string)) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, alg := range allAlgorithms {
			t.Run(alg.Name(), func(t *testing.T) {
				clock.Set(t0)
				f(t, store, clock, alg, keyOf(t))
			})
		}
	})
}

// A policy whose Limit changes, its Name, algorithm and Window kept, reads the state it had:
// 6 of 10 per minute are used at t0, and the policy is then raised to 20 or lowered to 5 (or,
// for the buckets, its Burst cut to 4). The window algorithms keep their count of 6: 14 left
// when raised; over the lowered limit, refused until the count drains. The rate-based ones
// keep their TAT, 36 s ahead: 12 intervals of 3 s when raised (8 left of 20), 3 of 12 s when
// lowered (2 left of 5), and beyond a bucket of 4 × 6 s = 24 s, refused for 36 + 6 − 24 = 18 s.
// Without the change a raised limit was a fresh quota of 20 and a lowered one of 5.
func TestChangedLimitKeepsCount(t *testing.T) {
	meter := map[string]afterChange{"raised": {8, 3 * time.Second}, "lowered": {2, 12 * time.Second}, "burst-cut": {0, 18 * time.Second}}
	want := map[algorithms.Algorithm]map[string]afterChange{
		algorithms.FixedWindow{}: {"raised": {14, time.Minute}, "lowered": {0, time.Minute}}, // the window's end
		algorithms.SlidingLog{}:  {"raised": {14, time.Minute}, "lowered": {0, time.Minute}}, // the 6 units leave the window
		algorithms.InFlight{}:    {"raised": {14, time.Minute}, "lowered": {0, time.Minute}}, // their lifetimes end
		// Raised: next window, where 20×(1−f)+1 ≤ 20 at f = 1/20. Lowered: 6×(1−f)+1 ≤ 5 at f = 1/3.
		algorithms.SlidingCounter{}: {"raised": {14, 63 * time.Second}, "lowered": {0, 80 * time.Second}},
		algorithms.GCRA{}:           meter,
		algorithms.TokenBucket{}:    meter,
		algorithms.LeakyBucket{}:    meter,
		shaping:                     meter,
	}
	forEachAlgorithm(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock, alg algorithms.Algorithm, _ string) {
		if want[alg] == nil {
			t.Fatalf("no expectation for %s: add it to the table", alg.Name())
		}
		old := ratelimit.Policy{Name: "tier", Limit: 10, Window: time.Minute, Algorithm: alg}
		raised, lowered, burstCut := old, old, old
		raised.Limit, lowered.Limit, burstCut.Burst = 20, 5, 4
		changes := map[string]ratelimit.Policy{"raised": raised, "lowered": lowered, "burst-cut": burstCut}
		for _, name := range []string{"raised", "lowered", "burst-cut"} {
			w, ok := want[alg][name]
			if !ok {
				continue // the window algorithms have no burst
			}
			t.Run(name, func(t *testing.T) {
				clock.Set(t0)
				key := keyOf(t)
				l := mustNew(t, store, old)
				for i := 0; i < 6; i++ {
					if d := allow(t, l, key, 1); !d.Allowed {
						t.Fatalf("request %d of 10 denied", i)
					}
				}
				assertAdmits(t, mustNew(t, store, changes[name]), clock, key, w)
			})
		}
	})
}

// assertAdmits checks that l reads w.remaining for key, admits that much, and then refuses a
// request of cost 1 until w.retry has passed, and not a microsecond less.
func assertAdmits(t *testing.T, l *ratelimit.Limiter, clock *fakeClock, key string, w afterChange) {
	t.Helper()
	if d := allow(t, l, key, 0); !d.Allowed || d.Remaining != w.remaining {
		t.Fatalf("after the change, a read: allowed=%v remaining %d, want allowed, %d", d.Allowed, d.Remaining, w.remaining)
	}
	if w.remaining > 0 {
		if d := allow(t, l, key, w.remaining); !d.Allowed || d.Remaining != 0 {
			t.Fatalf("the %d remaining: allowed=%v remaining=%d, want allowed, 0 left", w.remaining, d.Allowed, d.Remaining)
		}
	}
	if d := allow(t, l, key, 1); d.Allowed || d.Remaining != 0 || d.RetryAfter != w.retry {
		t.Fatalf("one more: allowed=%v remaining=%d retry=%v, want refused, 0 left, retry %v", d.Allowed, d.Remaining, d.RetryAfter, w.retry)
	}
	clock.Advance(w.retry - time.Microsecond)
	if d := allow(t, l, key, 1); d.Allowed {
		t.Fatalf("1µs before its retry: allowed")
	}
	clock.Advance(time.Microsecond)
	if d := allow(t, l, key, 1); !d.Allowed {
		t.Fatalf("at its retry: refused, retry %v", d.RetryAfter)
	}
}

// A TAT written at a fraction of a microsecond that the changed limit's interval cannot express
// rounds up to the next whole microsecond, never down. At 3 per second two requests put the TAT
// at 666,666⅔ µs. Read at 7 per second it is 666,667: 2 left, and a request of 3 waits until
// 666,667 + 3 × 142,857 1/7 − 1,000,000 µs, rounded up: 95,239 µs (misread as 666,666 2/7, it was
// 95,238). At 2 per second (whole microseconds, where the old Lua refused the state as
// malformed) nothing is left, and a request waits 666,667 + 500,000 − 1,000,000 = 166,667 µs.
func TestChangedLimitRoundsTheTATUp(t *testing.T) {
	forEachAlgorithm(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock, alg algorithms.Algorithm, key string) {
		if !algo.Of(alg).UsesBurst() {
			t.Skip("not a rate-based algorithm: no TAT")
		}
		p := ratelimit.Policy{Name: "bytes", Limit: 3, Window: time.Second, Algorithm: alg}
		allow(t, mustNew(t, store, p), key, 2)
		p.Limit = 7
		seven := mustNew(t, store, p)
		if d := allow(t, seven, key, 0); d.Remaining != 2 {
			t.Errorf("at 7/s: remaining %d, want 2", d.Remaining)
		}
		if d := allow(t, seven, key, 3); d.Allowed || d.RetryAfter != 95_239*time.Microsecond {
			t.Errorf("at 7/s, a request of 3: allowed=%v retry=%v, want refused for 95.239ms", d.Allowed, d.RetryAfter)
		}
		p.Limit = 2
		d := allow(t, mustNew(t, store, p), key, 1)
		if d.Allowed || d.RetryAfter != 166_667*time.Microsecond || d.ResetAfter != 666_667*time.Microsecond {
			t.Errorf("at 2/s: allowed=%v retry=%v reset=%v, want refused for 166.667ms, reset in 666.667ms", d.Allowed, d.RetryAfter, d.ResetAfter)
		}
	})
}

// Refunds work across a change of limit. 6 of 10 per minute are used at t0 in requests of 1,
// and the limit is lowered to 5. Each refund through the limiter that charged gives back its
// request, no more: for the window algorithms the count of 6 falls to 5 (at the limit: 0 left)
// and then 4 (1 left); the rate-based ones give back 6 s each, from 36 s of debt to 30 s and
// 24 s, which the new 12 s intervals read as 2, 2 and 3 left.
func TestChangedLimitRefunds(t *testing.T) {
	forEachAlgorithm(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock, alg algorithms.Algorithm, key string) {
		old := ratelimit.Policy{Name: "tier", Limit: 10, Window: time.Minute, Algorithm: alg}
		before := mustNew(t, store, old)
		var charged []ratelimit.Decision
		for i := 0; i < 6; i++ {
			charged = append(charged, allow(t, before, key, 1))
		}
		lowered := old
		lowered.Limit = 5
		after := mustNew(t, store, lowered)
		want := []int64{0, 0, 1}
		if algo.Of(alg).UsesBurst() { // the rate-based algorithms
			want = []int64{2, 2, 3}
		}
		for i, w := range want {
			if i > 0 {
				if err := before.Settle(ctx, key, charged[i], 0); err != nil {
					t.Fatal(err)
				}
			}
			if d := allow(t, after, key, 0); d.Remaining != w {
				t.Errorf("after %d refunds: remaining %d, want %d", i, d.Remaining, w)
			}
		}
	})
}

// In-flight slots taken under one limit are renewed and released under another: 6 slots of 10
// are taken at t0 and the limit lowered to 5. One renewed at 30 s through the new limiter
// outlives the others' lifetimes, and alone holds a slot at 60 s; given back, all 5 are free.
func TestChangedLimitRenews(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		clock.Set(t0)
		key := keyOf(t)
		before := mustNew(t, store, inFlight(10))
		var held []ratelimit.Decision
		for i := 0; i < 6; i++ {
			held = append(held, allow(t, before, key, 1))
		}
		after := mustNew(t, store, inFlight(5))
		clock.Advance(30 * time.Second)
		if err := ratelimit.RenewSlots(ctx, after, key, &held[0]); err != nil {
			t.Fatal(err)
		}
		if d := allow(t, after, key, 1); d.Allowed || d.RetryAfter != 30*time.Second {
			t.Fatalf("6 held of 5: allowed=%v retry=%v, want refused until the oldest 2 slots' lifetimes end in 30s", d.Allowed, d.RetryAfter)
		}
		clock.Advance(30 * time.Second)
		if n := freeSlots(t, after, key); n != 4 {
			t.Fatalf("at 60s: %d free, want 4 (the renewed slot is held)", n)
		}
		if err := after.Settle(ctx, key, held[0], held[0].Cost); err != nil {
			t.Fatal(err)
		}
		if n := freeSlots(t, after, key); n != 5 {
			t.Fatalf("after its release: %d free, want 5", n)
		}
	})
}

// A policy whose Name, algorithm or Window changes starts afresh rather than misreading the old
// state: for every algorithm, the old policy's 2 of 2 used, each changed one admits 1 with 1 left.
func TestChangedIdentityStartsAfresh(t *testing.T) {
	forEachAlgorithm(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock, alg algorithms.Algorithm, key string) {
		old := ratelimit.Policy{Name: "api", Limit: 2, Window: time.Minute, Algorithm: alg}
		allow(t, mustNew(t, store, old), key, 2)
		renamed, rewindowed, other := old, old, old
		renamed.Name, rewindowed.Window = "api2", time.Hour
		other.Algorithm = allAlgorithms[(slices.Index(allAlgorithms, alg)+1)%len(allAlgorithms)]
		for _, p := range []ratelimit.Policy{renamed, rewindowed, other} {
			if d := allow(t, mustNew(t, store, p), key, 1); !d.Allowed || d.Remaining != 1 {
				t.Errorf("%s %v %s: allowed=%v remaining=%d, want a fresh 1 of 2 left", p.Name, p.Window, p.Algorithm.Name(), d.Allowed, d.Remaining)
			}
		}
	})
}
