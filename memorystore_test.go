package ratelimit_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// A flood of new identities cannot grow the memory store past its bound, lock out a new
// identity, nor hand an exhausted identity a fresher quota: at the bound the store forgets
// only state that has used less than half its capacity (issue: 1,008–1,376 fresh identities
// reset an exhausted window under a 1,024-key bound; later, a flood locked every newcomer out).
func TestMemoryStoreBound(t *testing.T) {
	for _, alg := range allAlgorithms {
		t.Run(alg.Name(), func(t *testing.T) {
			clock := newFakeClock()
			store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithMaxKeys(1024))
			l := mustNew(t, store, ratelimit.Policy{Limit: 3, Window: time.Hour, Algorithm: alg},
				ratelimit.Policy{Limit: 10, Window: 24 * time.Hour, Algorithm: alg})
			for allow(t, l, "exhausted", 1).Allowed {
			}
			for i := range 20_000 {
				clock.Advance(time.Millisecond)
				if d := allow(t, l, "flood-"+strconv.Itoa(i), 1); !d.Allowed {
					t.Fatalf("new identity %d refused at the bound: %+v", i+1, d)
				}
				if i%1000 == 0 && allow(t, l, "exhausted", 0).Allowed && allow(t, l, "exhausted", 1).Allowed {
					t.Fatalf("after %d new identities, the exhausted identity was admitted: its state was evicted", i+1)
				}
			}
			// The bound, and the overflow quota's own keys: one per policy and shard.
			if n := ratelimit.StoreLen(store); n > 1024+64*2 {
				t.Fatalf("store holds %d keys, bound 1024 (+128 of the overflow quota)", n)
			}
			if allow(t, l, "exhausted", 1).Allowed {
				t.Fatal("the exhausted identity was admitted after the flood")
			}
			clock.Advance(72 * time.Hour)
			for i := range 64 {
				if !allow(t, l, "later-"+strconv.Itoa(i), 1).Allowed {
					t.Fatalf("new identity %d refused after the flood's state expired (the store holds %d keys)", i, ratelimit.StoreLen(store))
				}
			}
		})
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
