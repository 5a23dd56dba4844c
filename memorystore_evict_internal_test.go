package ratelimit

import (
	"testing"
	"time"
)

// A full shard's expired state is dropped to make room before any identity is weighed, and is
// not counted as an identity forgotten: the store sent the newcomer to the overflow quota when
// the sample met expired state first, and counted it evicted (ratelimit_memory_store_full_total
// {how="evicted"}) when it met it after a less-used entry.
func TestEvictDropsExpiredStateUncounted(t *testing.T) {
	for _, withLive := range []bool{false, true} {
		obs := &fullSeen{}
		store, _ := capability[*memoryStore](NewMemoryStore(WithMaxKeys(2*memoryShards), WithObserver(obs.observer())))
		p, err := Policy{Limit: 10, Window: time.Second}.compile()
		if err != nil {
			t.Fatal(err)
		}
		sh := store.shard("newcomer")
		sh.mu.Lock()
		sh.add("expired", &memoryEntry{policy: p.compiled, expires: 1_000})
		if withLive { // a live entry that used less than half its limit: one that may be forgotten
			sh.add("live", &memoryEntry{policy: p.compiled, expires: 10_000_000})
		}
		made := store.evict(sh, nil, 2_000)
		_, expiredLeft := sh.entries["expired"]
		_, liveLeft := sh.entries["live"]
		sh.mu.Unlock()
		if !made || expiredLeft {
			t.Errorf("live entry %v: evict made room %v, the expired state left %v; want room made by dropping it", withLive, made, expiredLeft)
		}
		if withLive && !liveLeft {
			t.Errorf("an identity was forgotten while expired state was there to drop")
		}
		if n := obs.full.Load(); n != 0 {
			t.Errorf("live entry %v: %d identities reported forgotten; want none (expired state is no identity)", withLive, n)
		}
	}
}
