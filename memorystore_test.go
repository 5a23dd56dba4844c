package ratelimit_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// A flood of new identities cannot grow the memory store past its bound.
func TestMemoryStoreBound(t *testing.T) {
	clock := newFakeClock()
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithMaxKeys(6400))
	l := mustNew(t, store, ratelimit.Policy{Limit: 10, Window: time.Hour})
	for i := 0; i < 100_000; i++ {
		allow(t, l, "flood-"+strconv.Itoa(i), 1)
	}
	if n := ratelimit.StoreLen(store); n > 6400 {
		t.Fatalf("store holds %d keys, bound 6400", n)
	}
	// A key just charged survives the flood's evictions better than the oldest ones: the store
	// drops the state closest to expiring.
	if d := allow(t, l, "flood-99999", 0); d.Remaining != 9 {
		t.Fatalf("the newest key lost its state (remaining %d, want 9)", d.Remaining)
	}
}

// Expired state is reclaimed as the store is used, without a background goroutine.
func TestMemoryStoreReclaimsExpired(t *testing.T) {
	clock := newFakeClock()
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock))
	for _, alg := range allAlgorithms {
		l := mustNew(t, store, ratelimit.Policy{Limit: 5, Window: time.Second, Algorithm: alg})
		for i := 0; i < 2000; i++ {
			allow(t, l, alg.Name()+strconv.Itoa(i), 1)
		}
	}
	before := ratelimit.StoreLen(store)
	clock.Advance(time.Hour) // every state above has expired
	l := mustNew(t, store, ratelimit.Policy{Name: "later", Limit: 5, Window: time.Second, Algorithm: algorithms.GCRA{}})
	for i := 0; i < 20_000; i++ {
		allow(t, l, "later"+strconv.Itoa(i), 1)
	}
	if after := ratelimit.StoreLen(store); after >= before+20_000-before/2 {
		t.Fatalf("store grew from %d to %d keys: expired state is not reclaimed", before, after)
	}
}

// The store's housekeeping never drops state that the check under way is about to charge.
func TestMemoryStoreSweepKeepsChargedState(t *testing.T) {
	clock := newFakeClock()
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock))
	perSecond := ratelimit.Policy{Name: "s", Limit: 1, Window: time.Second}
	l1 := mustNew(t, store, perSecond)
	l2 := mustNew(t, store, ratelimit.Policy{Name: "h", Limit: 1, Window: time.Hour}, perSecond) // shares "s" with l1
	for i := 0; i < 2000; i++ {
		key := "k" + strconv.Itoa(i)
		allow(t, l1, key, 1)
		clock.Advance(time.Second) // "s" of key has expired, but its entry is still there
		if !allow(t, l2, key, 1).Allowed {
			t.Fatalf("%s: l2 denied", key)
		}
		if allow(t, l1, key, 1).Allowed {
			t.Fatalf("%s: the per-second charge made through l2 was lost", key)
		}
	}
}
