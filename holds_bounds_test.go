package ratelimit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/algo"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// Reserve and settle attacked again (a second adversarial review of issue 35): the bounds the
// holds promise. Each test failed while the defect its comment names stood.

// holdEngines runs f on the memory store and on Redis with a key per policy and with hash
// state, each under a fake clock: the engines whose holds these tests compare.
func holdEngines(t *testing.T, f func(t *testing.T, store ratelimit.Store, clock *fakeClock)) {
	for _, e := range engines {
		switch e.name {
		case "memory", "redis", "redis-hash":
		default:
			continue
		}
		t.Run(e.name, func(t *testing.T) {
			clock := newFakeClock()
			f(t, e.store(t, ratelimit.WithClock(clock)), clock)
		})
	}
}

// Every expired hold is given back by the next reserve, however many there are: Redis gave
// back 64 a call, so 200 expired holds of 5 went on charging 680 of a quota of 1,000, and a
// reservation of 500 was denied for the rest of the hour where the memory store admitted it.
func TestEveryExpiredHoldIsGivenBack(t *testing.T) {
	holdEngines(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		clock.Set(t0)
		l := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}})
		key := keyOf(t)
		for i := range 200 {
			if d := reserve(t, l, key, 5); !d.Allowed || d.Cost != 5 {
				t.Fatalf("reservation %d: allowed %v, cost %d", i, d.Allowed, d.Cost)
			}
		}
		clock.Advance(5*time.Minute + time.Second) // past every hold's lifetime
		d := reserve(t, l, key, 500)
		if !d.Allowed || d.Remaining != 500 {
			t.Fatalf("200 expired holds: Reserve(500) allowed %v, Remaining %d (want 500), RetryAfter %v", d.Allowed, d.Remaining, d.RetryAfter)
		}
	})
}

// No identity keeps more than twice maxHolds holds at once, whatever its policy: a bucket
// whose burst is small beside its rate refills while its holds live, so a least estimate of
// a 1,024th of the burst let 5,000 holds of one identity stand at once (a sorted set of 5,000
// members in Redis, a scan of as many under a shard's lock in memory).
func TestHoldsOfAnIdentityAreBounded(t *testing.T) {
	for _, alg := range holdable {
		t.Run(alg.Name(), func(t *testing.T) {
			holdEngines(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
				clock.Set(t0)
				p := ratelimit.Policy{Name: "tokens", Limit: 1000, Window: time.Minute, Algorithm: alg}
				if algo.Of(alg).UsesBurst() {
					p.Limit, p.Burst = 6000, 64 // refilled a hundred times over while a hold lives
				}
				l := mustNew(t, store, p)
				key := keyOf(t)
				held := 0
				for range 5000 {
					if d := reserve(t, l, key, 0); d.Allowed {
						held++
					}
					clock.Advance(10 * time.Millisecond) // 50 s: within every hold's lifetime
				}
				if held > 2*1024 {
					t.Fatalf("%d holds of one identity stand at once; at most 2,048", held)
				}
			})
		})
	}
}

// The record of an identity's holds outlives every charge a hold made: a sliding counter's
// weighs two windows and a bucket's until its TAT, longer than the window when the burst is
// more than the limit. The record lived the longest window and a minute, so a hold never
// settled could outlive it and its charge was never given back (Remaining 54 for the memory
// store's 99). Here the record's time to live is set beside the state's.
func TestHoldsRecordOutlivesTheCharges(t *testing.T) {
	client := redistest.Standalone(t)
	for _, alg := range holdable {
		t.Run(alg.Name(), func(t *testing.T) {
			clock := newFakeClock()
			clock.Set(t0)
			prefix := redistest.Prefix(t)
			p := ratelimit.Policy{Name: "tokens", Limit: 10, Window: 10 * time.Minute, Algorithm: alg}
			if algo.Of(alg).UsesBurst() {
				p.Window, p.Burst = time.Minute, 100 // a TAT of up to 10 minutes
			}
			l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithClock(clock)), p)
			if d := reserve(t, l, "k", 1000); !d.Allowed {
				t.Fatal("the reservation was denied")
			}
			keys, err := client.Keys(context.Background(), prefix+"*").Result()
			if err != nil {
				t.Fatal(err)
			}
			var record, state time.Duration
			for _, k := range keys {
				ttl := client.PTTL(context.Background(), k).Val()
				if strings.Contains(k, "}:h") {
					record = ttl
				} else {
					state = max(state, ttl)
				}
			}
			// The injected clock makes state live at least a minute more than it needs; the
			// record must outlive what the state would need on the server's clock too.
			if record <= 0 || record < state {
				t.Fatalf("holds record lives %v, the state it charged %v (keys %v)", record, state, keys)
			}
		})
	}
}

// A hold taken on the local fallback is settled under the policies the fallback decided it
// under: its offsets on a TAT were computed under the store's, whose emission interval is
// shorter, and a settle gave back more than a memory store under the scaled policy does.
func TestFallbackSettlesAtItsOwnOffsets(t *testing.T) {
	steps := func(t *testing.T, l *ratelimit.Limiter, clock *fakeClock) int64 {
		clock.Set(t0)
		a, b := reserve(t, l, "k", 10), reserve(t, l, "k", 10)
		if !a.Allowed || !b.Allowed || a.Cost != 10 || b.Cost != 10 {
			t.Fatalf("reservations: allowed %v and %v", a.Allowed, b.Allowed)
		}
		clock.Advance(5 * time.Second)
		settle(t, l, "k", a, 0)
		return allow(t, l, "k", 0).Remaining
	}
	for _, alg := range holdable {
		t.Run(alg.Name(), func(t *testing.T) {
			refClock := newFakeClock()
			ref := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(refClock)),
				ratelimit.Policy{Name: "tokens", Limit: 50, Window: time.Minute, Algorithm: alg})
			want := steps(t, ref, refClock)

			clock := newFakeClock()
			store := ratelimit.NewRedisStore(deadRedis(t), ratelimit.WithClock(clock), ratelimit.WithFallback(0.5))
			l := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Minute, Algorithm: alg})
			if got := steps(t, l, clock); got != want {
				t.Fatalf("the fallback leaves Remaining %d; a memory store under its scaled policy, %d", got, want)
			}
		})
	}
}

// On the local fallback, an estimate is clamped to half the scaled policies' least capacity:
// it was clamped to half the store's alone, so at a share of 1/4 of 1000 an hour a fresh
// identity's estimate of 400 (held whole) was more than the share's whole 250, refused with a
// Retry-After of Never for the whole outage; and one of 240 held nearly all of it.
func TestFallbackClampsTheEstimateToItsShare(t *testing.T) {
	store := ratelimit.NewRedisStore(deadRedis(t), ratelimit.WithClock(newFakeClock()), ratelimit.WithFallback(0.25), ratelimit.WithDenialCache(0))
	l := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}})
	for _, estimate := range []int64{400, 240} {
		d := reserve(t, l, keyOf(t)+fmt.Sprint(estimate), estimate)
		if !d.Allowed || d.Cost != 125 || d.Remaining != 125 {
			t.Errorf("an estimate of %d on the fallback (250 of 1000): allowed %v, held %d, Remaining %d, RetryAfter %v; want held 125 (half of 250)",
				estimate, d.Allowed, d.Cost, d.Remaining, d.RetryAfter)
		}
	}
}
