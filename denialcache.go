package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"
)

// denialCache remembers identities the store denied until a known time, and answers their
// requests itself until then: a flood from one identity costs the store one call per
// Retry-After instead of one per request. It only ever denies, and only what the store
// denied for at least as long — a request of the same cost or more, before the store's own
// Retry-After has passed — so it never admits what the store would deny. A refund or a reset
// made through this process forgets the identity at once; one made by another instance is
// seen when the cached denial ends.
//
// Memory is bounded: at most max entries, each holding the denied policies' results.
type denialCache struct {
	seed   maphash.Seed
	shards [16]denialShard
	max    int // entries per shard
}

type denialShard struct {
	mu      sync.Mutex
	entries map[denialKey]*denial
}

// denialKey is an identity under one limiter's policy list.
type denialKey struct {
	id  string
	set *compiledPolicy // the list's first policy: compiled once per list
	n   int
}

// denial is what the store answered, and when.
type denial struct {
	at      time.Time // when the store denied, on the cache's clock
	until   time.Time // when the store's Retry-After ends
	cost    int64
	results []PolicyResult
}

func newDenialCache(entries int) *denialCache {
	c := &denialCache{seed: maphash.MakeSeed(), max: max(1, entries/16)}
	for i := range c.shards {
		c.shards[i].entries = map[denialKey]*denial{}
	}
	return c
}

func (c *denialCache) shard(id string) *denialShard {
	return &c.shards[maphash.String(c.seed, id)%uint64(len(c.shards))]
}

func keyOfDenial(id string, policies []Policy) denialKey {
	return denialKey{id: id, set: policies[0].compiled, n: len(policies)}
}

// answer fills out with the cached denial of a request of cost from id, as the store would
// answer it at now, and reports whether it did.
func (c *denialCache) answer(id string, policies []Policy, cost int64, now time.Time, out []PolicyResult) bool {
	sh := c.shard(id)
	sh.mu.Lock()
	d := sh.entries[keyOfDenial(id, policies)]
	if d == nil || cost < d.cost {
		sh.mu.Unlock()
		return false
	}
	if !now.Before(d.until) {
		delete(sh.entries, keyOfDenial(id, policies))
		sh.mu.Unlock()
		return false
	}
	elapsed := now.Sub(d.at)
	for i, r := range d.results {
		r.ResetAfter = max(r.ResetAfter-elapsed, 0)
		if r.RetryAfter > 0 {
			r.RetryAfter = max(r.RetryAfter-elapsed, time.Microsecond)
		}
		r.source = SourceDenialCache
		out[i] = r
	}
	sh.mu.Unlock()
	return true
}

// remember records the store's answer to a request of cost from id at now, when it is a denial
// with a Retry-After.
func (c *denialCache) remember(id string, policies []Policy, cost int64, now time.Time, out []PolicyResult) {
	var wait time.Duration
	for i := range out {
		if out[i].Allowed {
			continue
		}
		if out[i].RetryAfter == Never || out[i].RetryAfter <= 0 {
			return
		}
		wait = max(wait, out[i].RetryAfter)
	}
	if wait == 0 {
		return
	}
	d := &denial{at: now, until: now.Add(wait), cost: cost, results: append([]PolicyResult(nil), out...)}
	sh := c.shard(id)
	sh.mu.Lock()
	if len(sh.entries) >= c.max {
		sh.makeRoom(now)
	}
	sh.entries[keyOfDenial(id, policies)] = d
	sh.mu.Unlock()
}

// forget drops what is cached of id under the policies.
func (c *denialCache) forget(id string, policies []Policy) {
	sh := c.shard(id)
	sh.mu.Lock()
	delete(sh.entries, keyOfDenial(id, policies))
	sh.mu.Unlock()
}

// makeRoom drops the ended denials among a sample, or else one entry: forgetting a denial only
// sends the identity's next request to the store. The caller holds sh.mu.
func (sh *denialShard) makeRoom(now time.Time) {
	const sample = 16
	seen := 0
	var any denialKey
	for k, d := range sh.entries {
		if !now.Before(d.until) {
			delete(sh.entries, k)
		}
		any = k
		if seen++; seen >= sample {
			break
		}
	}
	if len(sh.entries) >= 1 && seen > 0 {
		delete(sh.entries, any)
	}
}
