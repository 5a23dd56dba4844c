package ratelimit_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// A flood of new identities cannot grow the memory store past its bound, nor hand an identity
// a fresher quota than it had: at the bound, live state is never evicted and a new identity
// is refused until room frees (issue: 1,008–1,376 fresh identities reset an exhausted window
// under a 1,024-key bound).
func TestMemoryStoreBound(t *testing.T) {
	for _, alg := range allAlgorithms {
		t.Run(alg.Name(), func(t *testing.T) {
			clock := newFakeClock()
			store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithMaxKeys(1024))
			l := mustNew(t, store, ratelimit.Policy{Limit: 3, Window: time.Hour, Algorithm: alg},
				ratelimit.Policy{Limit: 10, Window: 24 * time.Hour, Algorithm: alg})
			for allow(t, l, "exhausted", 1).Allowed {
			}
			refused := 0
			for i := range 20_000 {
				clock.Advance(time.Millisecond)
				d := allow(t, l, "flood-"+strconv.Itoa(i), 1)
				if !d.Allowed {
					refused++
					if d.RetryAfter <= 0 {
						t.Fatalf("a new identity refused at the bound has no Retry-After: %+v", d)
					}
				}
				if i%1000 == 0 && allow(t, l, "exhausted", 0).Allowed && allow(t, l, "exhausted", 1).Allowed {
					t.Fatalf("after %d new identities, the exhausted identity was admitted: its state was evicted", i+1)
				}
			}
			if n := ratelimit.StoreLen(store); n > 1024 {
				t.Fatalf("store holds %d keys, bound 1024", n)
			}
			if refused == 0 {
				t.Fatal("20,000 new identities with live state, bound 1,024: none refused")
			}
			if allow(t, l, "exhausted", 1).Allowed {
				t.Fatal("the exhausted identity was admitted after the flood")
			}
			// Room frees as state expires (a sliding counter's daily state matters for two
			// days): later, new identities are admitted again (64 of them, two keys each: far
			// from filling any shard of 16 keys).
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
