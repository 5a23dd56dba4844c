package ratelimit_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// refundable are the algorithms whose charges are given back by Refund: every one but
// shaping, whose admissions wait rather than fail (its refund is the TAT model's, compared
// between the engines by the differential test).
var refundable = func() []algorithms.Algorithm {
	var out []algorithms.Algorithm
	for _, a := range allAlgorithms {
		if !algo.Of(a).Shapes() {
			out = append(out, a)
		}
	}
	return out
}()

// A refund gives back the charge of its decision, once, and nothing that was not charged.
func TestRefund(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, alg := range refundable {
			t.Run(alg.Name(), func(t *testing.T) {
				clock.Set(t0)
				l := mustNew(t, store, ratelimit.Policy{Limit: 3, Window: time.Minute, Algorithm: alg})
				key := keyOf(t)
				first := allow(t, l, key, 1)
				allow(t, l, key, 2)
				denied := allow(t, l, key, 1)
				if denied.Allowed {
					t.Fatal("4th request of 3/min allowed")
				}
				if err := l.Settle(ctx, key, denied, 0); err != nil { // charged nothing: gives nothing
					t.Fatal(err)
				}
				if allow(t, l, key, 1).Allowed {
					t.Fatal("refunding a denied request gave something back")
				}
				if err := l.Settle(ctx, key, first, 0); err != nil {
					t.Fatal(err)
				}
				if !allow(t, l, key, 1).Allowed {
					t.Fatal("request after a refund of 1 denied")
				}
				if allow(t, l, key, 1).Allowed {
					t.Fatal("a refund of 1 gave back more than 1")
				}
			})
		}
	})
}

// A refund never gives back what time has already given back: after the state has recovered
// from a charge (a window ended, a bucket refilled, logged units left), refunding that charge
// credits nothing — the abuse a slow handler under CountIf would otherwise allow.
func TestRefundNeverCreditsTwice(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, alg := range refundable {
			t.Run(alg.Name(), func(t *testing.T) {
				clock.Set(t0)
				l := mustNew(t, store, ratelimit.Policy{Limit: 5, Window: time.Minute, Algorithm: alg})
				key := keyOf(t)
				old := allow(t, l, key, 5)
				clock.Advance(2 * time.Minute) // everything is available again
				if !allow(t, l, key, 5).Allowed {
					t.Fatal("a full charge after two windows denied")
				}
				if err := l.Settle(ctx, key, old, 0); err != nil {
					t.Fatal(err)
				}
				if allow(t, l, key, 1).Allowed {
					t.Fatal("refunding a charge that time had given back credited it again")
				}
			})
		}
	})
}

// Half way through a charge's recovery, the rate algorithms give back only the half that is
// left: 5 at 0 s, 2 more at 30 s, a refund of the first 5 at 31 s — and no more than 5 in any
// burst.
func TestRefundPartial(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, alg := range []algorithms.Algorithm{algorithms.TokenBucket{}, algorithms.LeakyBucket{}, algorithms.GCRA{}} {
			t.Run(alg.Name(), func(t *testing.T) {
				clock.Set(t0)
				l := mustNew(t, store, ratelimit.Policy{Limit: 5, Window: time.Minute, Algorithm: alg}) // one back every 12 s
				key := keyOf(t)
				first := allow(t, l, key, 5)
				clock.Advance(30 * time.Second)
				admitted := 0
				for allow(t, l, key, 1).Allowed {
					admitted++
				}
				clock.Advance(time.Second)
				if err := l.Settle(ctx, key, first, 0); err != nil {
					t.Fatal(err)
				}
				for allow(t, l, key, 1).Allowed {
					admitted++
				}
				if admitted > 5 {
					t.Fatalf("%d admitted within one second after the refund; the burst is 5", admitted)
				}
				if admitted < 4 {
					t.Fatalf("only %d admitted: the refund gave back too little", admitted)
				}
			})
		}
	})
}

// TestRefundCancelsAReservation: under a shaping policy an admission reserves a slot in the
// queue (Decision.Delay), and refunding it before its turn gives the slot back to the queue,
// less the time since it was taken, as docs/clients.md's "Reservations" says.
func TestRefundCancelsAReservation(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		ctx := context.Background()
		l := mustNew(t, store, ratelimit.Policy{Name: "queue", Limit: 1, Window: time.Second, Burst: 5, Algorithm: algorithms.LeakyBucket{Shaping: true}})
		key := t.Name()
		var delays []time.Duration
		var second ratelimit.Decision
		for i := range 3 {
			d, err := l.Allow(ctx, key)
			if err != nil || !d.Allowed {
				t.Fatalf("request %d: %+v, %v; want admitted", i, d, err)
			}
			if i == 1 {
				second = d
			}
			delays = append(delays, d.Delay)
		}
		if want := []time.Duration{0, time.Second, 2 * time.Second}; !slices.Equal(delays, want) {
			t.Fatalf("delays %v, want %v", delays, want)
		}
		clock.Advance(100 * time.Millisecond)
		if err := l.Settle(ctx, key, second, 0); err != nil {
			t.Fatal(err)
		}
		// The queue ended at 3 s; the refund moves it back by the slot less the 100 ms since it
		// was taken (a refund never gives back what time has), to 2.1 s: the next request
		// waits 2 s, not the 2.9 s it would have.
		d, err := l.Allow(ctx, key)
		if err != nil || !d.Allowed || d.Delay != 2*time.Second {
			t.Fatalf("after cancelling the reservation of 1 s: %+v, %v; want admitted with delay 2s", d, err)
		}
	})
}
