package ratelimit_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// hammer sends perWorker requests from each of workers goroutines, spread over the limiters,
// all on one key, and returns how many were admitted.
func hammer(t *testing.T, limiters []*ratelimit.Limiter, workers, perWorker int, key string) int64 {
	t.Helper()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(l *ratelimit.Limiter) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				d, err := l.Allow(ctx, key)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
			}
		}(limiters[w%len(limiters)])
	}
	wg.Wait()
	return admitted.Load()
}

// Four independent limiters, each with its own Redis client, and 64 goroutines on one key:
// every algorithm admits exactly its limit, not one more. The clock stands still, so the
// exact count is the limit for the window algorithms too.
func TestConcurrentInstancesRedis(t *testing.T) {
	addr := redistest.Addr(t)
	prefix := redistest.Prefix(t)
	checker := redistest.Standalone(t)
	t.Cleanup(func() { assertAllKeysExpire(t, checker, prefix) })
	clock := newFakeClock()
	const limit = 100
	for _, alg := range allAlgorithms {
		t.Run(alg.Name(), func(t *testing.T) {
			var limiters []*ratelimit.Limiter
			for i := 0; i < 4; i++ {
				client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 16})
				t.Cleanup(func() { client.Close() })
				store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithClock(clock))
				limiters = append(limiters, mustNew(t, store, ratelimit.Policy{Limit: limit, Window: time.Minute, Algorithm: alg}))
			}
			if got := hammer(t, limiters, 64, 8, "hot"); got != limit {
				t.Fatalf("admitted %d of 512, want exactly %d", got, limit)
			}
		})
	}
	// On the server's clock (no fake time) the exact algorithms still admit exactly the limit
	// while the test is far shorter than one emission interval (36 s).
	for _, alg := range []algorithms.Algorithm{algorithms.SlidingLog{}, algorithms.TokenBucket{}, algorithms.GCRA{}, algorithms.LeakyBucket{}} {
		t.Run("servertime/"+alg.Name(), func(t *testing.T) {
			var limiters []*ratelimit.Limiter
			for i := 0; i < 4; i++ {
				client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 16})
				t.Cleanup(func() { client.Close() })
				limiters = append(limiters, mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix)), ratelimit.Policy{Limit: limit, Window: time.Hour, Algorithm: alg}))
			}
			start := time.Now()
			got := hammer(t, limiters, 64, 8, "hot-servertime")
			if time.Since(start) < 30*time.Second && got != limit {
				t.Fatalf("admitted %d of 512, want exactly %d", got, limit)
			}
		})
	}
}

func TestConcurrentMemory(t *testing.T) {
	clock := newFakeClock()
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock))
	for _, alg := range allAlgorithms {
		t.Run(alg.Name(), func(t *testing.T) {
			l := mustNew(t, store, ratelimit.Policy{Limit: 1000, Window: time.Minute, Algorithm: alg})
			if got := hammer(t, []*ratelimit.Limiter{l}, 256, 8, "hot"); got != 1000 {
				t.Fatalf("admitted %d of 2048, want exactly 1000", got)
			}
		})
	}
}

// While time moves, the window algorithms stay within their documented bounds: the fixed
// window at most 2×Limit in any Window (Limit per aligned window), the sliding counter at most
// Limit per aligned window as well, and the exact algorithms at most Limit in any Window
// (Burst + elapsed/interval for the buckets).
func TestConcurrentBoundsWhileTimeMoves(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, alg := range allAlgorithms {
			t.Run(alg.Name(), func(t *testing.T) {
				clock.Set(t0)
				const limit = 20
				l := mustNew(t, store, ratelimit.Policy{Limit: limit, Window: time.Second, Algorithm: alg})
				key := keyOf(t)
				var total int64
				// 4 seconds in steps of 250ms, 64 requests from 16 goroutines each step.
				for step := 0; step < 16; step++ {
					total += hammer(t, []*ratelimit.Limiter{l}, 16, 4, key)
					clock.Advance(250 * time.Millisecond)
				}
				// Over 4 s (4 windows): exact algorithms admit at most limit + 4·limit·(3.75/4)
				// (a full burst, then the refill); window algorithms at most limit per window.
				var bound int64
				switch alg.(type) {
				case algorithms.FixedWindow, algorithms.SlidingCounter, algorithms.SlidingLog:
					bound = 4 * limit
				default:
					bound = limit + limit*3750/1000
				}
				if total > bound || total < limit {
					t.Fatalf("admitted %d over 4s, want between %d and %d", total, limit, bound)
				}
			})
		}
	})
}
