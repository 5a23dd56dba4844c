package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// The quota leases attacked (an adversarial review of the hot-identity layers): each test
// failed while the defect its comment names stood.

// A lease list whose policy has NoDenialCache asks the store on every denial, as the denial
// cache does: the lease layer answered its denials locally until the window's end, so units
// given back from outside the library (unannounced) admitted nothing for up to an hour.
func TestLeaseDenialHonoursNoDenialCache(t *testing.T) {
	clock := fakeclock.New(fakeclock.T0)
	mem := NewMemoryStore(WithClock(clock))
	leases := leasing(mem, newStoreConfig(false), newBackground(), nil)
	leases.heard = func() bool { return true } // subscribed, as the Redis store is
	l, err := New(leases, Policy{Name: "tenant", Limit: 10, Window: time.Hour, Algorithm: algorithms.FixedWindow{},
		Lease: time.Minute, NoDenialCache: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out := make([]PolicyResult, 1)
	if _, err := mem.Check(ctx, "hot", l.policies, 10, true, out); err != nil || !out[0].Allowed {
		t.Fatalf("spending the quota: %+v, %v", out[0], err)
	}
	for i := range 2 { // the second is hot: a lease refused, then the request alone, denied
		if d, err := l.Allow(ctx, "hot"); err != nil || d.Allowed {
			t.Fatalf("request %d: %+v, %v; want denied", i+1, d, err)
		}
	}
	// A script of the user's own gives 5 units back, unannounced (why NoDenialCache is set).
	if err := mem.Refund(ctx, "hot", l.policies, 5, clock.Now()); err != nil {
		t.Fatal(err)
	}
	probe := make([]PolicyResult, 1)
	if _, err := mem.Check(ctx, "hot", l.policies, 1, false, probe); err != nil || !probe[0].Allowed {
		t.Fatalf("the store itself: %+v, %v; want it to admit", probe[0], err)
	}
	d, err := l.Allow(ctx, "hot")
	if err != nil || !d.Allowed {
		t.Fatalf("after the unannounced give-back: allowed %v, source %v, %v; want admitted by the store (NoDenialCache: every denial asks the store)", d.Allowed, d.Source, err)
	}
}

// A refund made here under another policy list of the identity (the same policy without Lease,
// during a rollout) ends its lease denial at once, as the denial cache forgets every list of
// the identity: it lasted until the store's announcement came back (or the window's end,
// where none comes).
func TestLeaseDenialEndsWithARefundHereUnderAnotherList(t *testing.T) {
	clock := fakeclock.New(fakeclock.T0)
	mem := NewMemoryStore(WithClock(clock))
	leases := leasing(mem, newStoreConfig(false), newBackground(), nil)
	leases.heard = func() bool { return true } // no announcement comes: nothing publishes
	p := Policy{Name: "tenant", Limit: 10, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Minute}
	leased, err := New(leases, p)
	if err != nil {
		t.Fatal(err)
	}
	plainP := p
	plainP.Lease = 0
	plain, err := New(leases, plainP) // the same state (Name, algorithm, window), no Lease
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := plain.Allow(ctx, "hot")
	if err != nil || !first.Allowed {
		t.Fatalf("first: %+v, %v", first, err)
	}
	out := make([]PolicyResult, 1)
	if _, err := mem.Check(ctx, "hot", leased.policies, 9, true, out); err != nil || !out[0].Allowed {
		t.Fatalf("spending: %+v %v", out[0], err)
	}
	for i := range 3 {
		if d, err := leased.Allow(ctx, "hot"); err != nil || d.Allowed {
			t.Fatalf("leased request %d: %+v, %v; want denied", i+1, d, err)
		}
	}
	if err := plain.Settle(ctx, "hot", first, 0); err != nil { // a refund here, of 1 unit
		t.Fatal(err)
	}
	d, err := leased.Allow(ctx, "hot")
	if err != nil || !d.Allowed {
		t.Fatalf("after a refund through this process: allowed %v by %v, %v, RetryAfter %v; want admitted (a unit was given back)", d.Allowed, d.Source, err, d.RetryAfter)
	}
}
