package ratelimit_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/redistest"
)

// The Go transitions (memory store) and the Lua ones (Redis) agree on every decision of long
// random request sequences, for random parameters of every algorithm: with peeks, refunds,
// costs far beyond any capacity, and a clock that sometimes goes back.
func TestEnginesAgreeOnRandomTraffic(t *testing.T) {
	client := redistest.Standalone(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, alg := range allAlgorithms {
		for trial := 0; trial < 6; trial++ {
			limit := 1 + rng.Int64N(50)
			window := time.Duration(1+rng.Int64N(5000)) * time.Millisecond
			if rng.IntN(3) == 0 {
				window += time.Duration(rng.Int64N(1000)) * time.Microsecond // odd windows too
			}
			p := ratelimit.Policy{Limit: limit, Window: window, Algorithm: alg}
			if rng.IntN(2) == 0 && p.WithBurst(limit*2).Validate() == nil {
				p = p.WithBurst(limit * 2)
			}
			t.Run(fmt.Sprintf("%s/%v", alg.Name(), p), func(t *testing.T) {
				clock := newFakeClock()
				clock.Advance(time.Duration(rng.Int64N(int64(time.Hour))))
				mem := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), p)
				red := mustNew(t, redisStore(t, client, ratelimit.WithClock(clock)), p)
				key := keyOf(t)
				var lastMem, lastRed ratelimit.Decision
				for i := 0; i < 300; i++ {
					step := time.Duration(rng.Int64N(int64(window) / max(1, limit/2)))
					if rng.IntN(15) == 0 {
						step = -step // the clock goes back (NTP, a failover to another server)
					}
					clock.Advance(step)
					cost := rng.Int64N(3)
					switch rng.IntN(20) {
					case 0:
						cost = rng.Int64N(2*limit + 2)
					case 1:
						cost = []int64{math.MaxInt64, 1 << 54, 1 << 40}[rng.IntN(3)]
					}
					check := func(l *ratelimit.Limiter) ratelimit.Decision { return allow(t, l, key, cost) }
					if rng.IntN(10) == 0 {
						check = func(l *ratelimit.Limiter) ratelimit.Decision {
							d, err := l.Peek(ctx, key)
							if err != nil {
								t.Fatal(err)
							}
							return d
						}
					}
					if rng.IntN(12) == 0 && lastMem.Allowed { // give back the last charge
						if err := mem.Refund(ctx, key, lastMem); err != nil {
							t.Fatal(err)
						}
						if err := red.Refund(ctx, key, lastRed); err != nil {
							t.Fatal(err)
						}
					}
					a, b := check(mem), check(red)
					if rng.IntN(2) == 0 {
						lastMem, lastRed = a, b
					}
					if a.Allowed != b.Allowed || a.Remaining != b.Remaining || a.RetryAfter != b.RetryAfter ||
						a.ResetAfter != b.ResetAfter || a.Delay != b.Delay {
						t.Fatalf("step %d (cost %d): memory and Redis disagree\nmemory: allowed=%v remaining=%d retry=%v reset=%v delay=%v\n redis: allowed=%v remaining=%d retry=%v reset=%v delay=%v",
							i, cost, a.Allowed, a.Remaining, a.RetryAfter, a.ResetAfter, a.Delay, b.Allowed, b.Remaining, b.RetryAfter, b.ResetAfter, b.Delay)
					}
				}
			})
		}
	}
}
