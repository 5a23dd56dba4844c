package ratelimit_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// Memory, Redis and the Cluster agree on random sequences of acquires, releases and renewals
// of in-flight slots under a rate policy, with time moving across slot lifetimes: the same decisions,
// the same free slots after every step.
func TestInFlightEnginesAgree(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		policies := []ratelimit.Policy{
			{Name: "rate", Limit: 1 + rng.Int64N(20), Window: time.Duration(1+rng.IntN(5)) * time.Second},
			{Name: "slots", Limit: 1 + rng.Int64N(4), Window: time.Duration(1+rng.IntN(3)) * time.Second, Algorithm: algorithms.InFlight{}},
		}
		clock := newFakeClock()
		engines := []*ratelimit.Limiter{
			mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), policies...),
			mustNew(t, redisStore(t, redistest.Standalone(t), ratelimit.WithClock(clock)), policies...),
			mustNew(t, redisStore(t, redistest.Cluster(t), ratelimit.WithClock(clock)), policies...),
		}
		key := keyOf(t) + "-" + string(rune('a'+seed))
		held := make([][]ratelimit.Decision, len(engines)) // per engine, the decisions holding slots
		for step := 0; step < 200; step++ {
			op := rng.IntN(10)
			pick := 0
			if len(held[0]) > 0 {
				pick = rng.IntN(len(held[0]))
			}
			var want ratelimit.Decision
			for i, l := range engines {
				switch {
				case op < 4: // acquire
					d := allow(t, l, key, 1)
					if i == 0 {
						want = d
					} else if d.Allowed != want.Allowed || d.Remaining != want.Remaining || d.RetryAfter != want.RetryAfter {
						t.Fatalf("seed %d step %d engine %d: acquire %+v; memory said %+v", seed, step, i, d, want)
					}
					if ratelimit.Holds(d) {
						held[i] = append(held[i], d)
					}
				case op < 7 && len(held[i]) > 0: // release
					if err := l.Settle(ctx, key, held[i][pick], held[i][pick].Cost); err != nil {
						t.Fatal(err)
					}
					held[i] = append(held[i][:pick], held[i][pick+1:]...)
				case op < 8 && len(held[i]) > 0: // renew
					if err := ratelimit.RenewSlots(ctx, l, key, &held[i][pick]); err != nil {
						t.Fatal(err)
					}
				}
			}
			if rng.IntN(3) == 0 {
				clock.Advance(time.Duration(rng.Int64N(int64(1500 * time.Millisecond))))
			}
			free := freeSlots(t, engines[0], key)
			for i, l := range engines[1:] {
				if n := freeSlots(t, l, key); n != free {
					t.Fatalf("seed %d step %d: engine %d has %d slots free; memory %d", seed, step, i+1, n, free)
				}
			}
		}
		for i, l := range engines { // every slot released: all free
			for _, d := range held[i] {
				if err := l.Settle(ctx, key, d, d.Cost); err != nil {
					t.Fatal(err)
				}
			}
			if n := freeSlots(t, l, key); n != policies[1].Limit {
				t.Fatalf("seed %d: engine %d has %d slots free after every release; want %d", seed, i, n, policies[1].Limit)
			}
		}
	}
}
