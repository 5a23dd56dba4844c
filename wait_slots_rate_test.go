//go:build go1.25

package ratelimit_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// WaitN's doc: "While an in-flight policy denies, WaitN asks again at growing intervals
// (5 ms, doubling to 100 ms) rather than at its Retry-After, since a slot comes back when a
// request ends." When a rate policy denies beside the in-flight one, WaitN waits the
// in-flight policy's Retry-After (the slot's whole lifetime) instead.
// WaitN waits for a rate policy's turn, not for an in-flight slot's whole lease, when both
// deny: the slot comes back when a request ends. It waited the lease (a minute), or failed at
// once with a deadline shorter than it, where the rate admitted within a second.
func TestWaitForTheRateBesideASlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(bubbleClock{})),
			ratelimit.Policy{Name: "slots", Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}},
			ratelimit.Policy{Name: "rate", Limit: 1, Window: time.Second, Algorithm: algorithms.FixedWindow{}})
		ctx := context.Background()
		held, err := l.AllowN(ctx, "k", 1)
		if err != nil || !held.Allowed {
			t.Fatalf("first: %+v %v", held, err)
		}
		ended := make(chan struct{})
		go func() { // the first request ends after 100 ms: its slot comes back
			defer close(ended)
			time.Sleep(100 * time.Millisecond)
			if err := l.Settle(ctx, "k", held, held.Cost); err != nil {
				t.Error(err)
			}
		}()
		defer func() { <-ended }()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		start := time.Now()
		d, err := l.Wait(wctx, "k")
		took := time.Since(start)
		if err != nil {
			t.Fatalf("Wait with 5 s to go, the slot back at 100 ms and the rate's turn at <= 1 s: %v (after %v, RetryAfter %v)", err, took, d.RetryAfter)
		}
		if took > 1100*time.Millisecond {
			t.Fatalf("admitted after %v; want <= ~1 s", took)
		}
		_ = l.Settle(ctx, "k", d, d.Cost)
	})
}

// The same without a deadline: WaitN sleeps the slot's whole lifetime (1 min).
// The same without a deadline: it slept the whole minute.
func TestWaitForTheRateBesideASlotNoDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(bubbleClock{})),
			ratelimit.Policy{Name: "slots", Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}},
			ratelimit.Policy{Name: "rate", Limit: 1, Window: time.Second, Algorithm: algorithms.FixedWindow{}})
		ctx := context.Background()
		held, _ := l.AllowN(ctx, "k", 1)
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			time.Sleep(100 * time.Millisecond)
			_ = l.Settle(ctx, "k", held, held.Cost)
		}()
		defer func() { <-ended }()
		start := time.Now()
		d, err := l.Wait(ctx, "k")
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if took > 1100*time.Millisecond {
			t.Fatalf("admitted after %v; the slot was back at 100 ms and the rate admitted at 1 s", took)
		}
		_ = l.Settle(ctx, "k", d, d.Cost)
	})
}
