package ratelimit_test

import (
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// A refund gives back what was charged, never more than a fresh state holds, and is a no-op
// on state that is gone.
func TestRefund(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, alg := range allAlgorithms {
			if _, ok := alg.(algorithms.LeakyBucket); ok && alg.(algorithms.LeakyBucket).Shaping {
				continue // shaping reserves slots in a queue; covered by the GCRA case it shares
			}
			t.Run(alg.Name(), func(t *testing.T) {
				clock.Set(t0)
				l := mustNew(t, store, ratelimit.PerMinute(3).Using(alg))
				key := keyOf(t)
				if err := l.Refund(ctx, key, 2); err != nil { // nothing to refund: no state appears
					t.Fatal(err)
				}
				allow(t, l, key, 3)
				if allow(t, l, key, 1).Allowed {
					t.Fatal("4th request of 3/min allowed")
				}
				if err := l.Refund(ctx, key, 1); err != nil {
					t.Fatal(err)
				}
				if d := allow(t, l, key, 1); !d.Allowed {
					t.Fatal("request after a refund of 1 denied")
				}
				if allow(t, l, key, 1).Allowed {
					t.Fatal("a refund of 1 gave back more than 1")
				}
				if err := l.Refund(ctx, key, 100); err != nil { // more than was charged
					t.Fatal(err)
				}
				for i := 0; i < 3; i++ {
					if !allow(t, l, key, 1).Allowed {
						t.Fatalf("request %d after refunding everything denied", i)
					}
				}
				if allow(t, l, key, 1).Allowed {
					t.Fatal("a large refund left more than a fresh state")
				}
				clock.Advance(time.Hour) // the state expires; a refund then is a no-op
				if err := l.Refund(ctx, key, 5); err != nil {
					t.Fatal(err)
				}
				if d := allow(t, l, key, 0); d.Remaining != 3 {
					t.Fatalf("remaining %d after expiry and a refund, want 3", d.Remaining)
				}
			})
		}
	})
}
