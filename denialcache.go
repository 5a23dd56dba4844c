package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// denialCache remembers identities the store denied until a known time, and answers their
// requests itself until then: a flood from one identity costs the store about two calls per
// Retry-After (the admission, and the next denial) instead of one per request. It only ever denies, and only what the store
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

// denialKey is an identity under one limiter's policy list: its first policy (compiled once
// per list) and length. Two lists may share both (a list and another that starts alike), so a
// denial also holds its whole list, and answers only for that list.
type denialKey struct {
	id  string
	set *compiledPolicy
	n   int
}

// denial is what the store answered, and when.
type denial struct {
	of      []*compiledPolicy // the list it was denied under
	at      time.Time         // when the store denied, on the cache's clock
	until   time.Time         // when the store's Retry-After ends
	cost    int64
	results []PolicyResult
	// refreshing is set while one request asks the store again, its denial over: the others
	// are still answered from the cache meanwhile, so a flood sends one request at a time.
	refreshing bool
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
// answer it at now, and reports whether it did. When the denial is over, the first request
// to come goes to the store (refresh: settle must follow its answer) and the others are still
// denied from the cache until it has.
func (c *denialCache) answer(id string, policies []Policy, cost int64, now time.Time, out []PolicyResult) (hit, refresh bool) {
	sh := c.shard(id)
	sh.mu.Lock()
	d := sh.entries[keyOfDenial(id, policies)]
	if d == nil || cost < d.cost || !samePolicies(d.of, policies) {
		sh.mu.Unlock()
		return false, false
	}
	if !now.Before(d.until) && !d.refreshing {
		d.refreshing = true
		sh.mu.Unlock()
		return false, true
	}
	elapsed := now.Sub(d.at)
	for i, r := range d.results {
		r.ResetAfter = max(r.ResetAfter-elapsed, 0)
		if r.EffectiveWindow > 0 {
			r.EffectiveWindow = max(r.EffectiveWindow-elapsed, time.Microsecond)
		}
		if r.RetryAfter > 0 {
			r.RetryAfter = max(r.RetryAfter-elapsed, time.Microsecond)
		}
		r.source = observe.SourceDenialCache
		out[i] = r
	}
	sh.mu.Unlock()
	return true, false
}

// settle records the store's answer to a request that refreshed a denial (see answer), or
// err when the store failed: a new denial replaces the old; an admission that left nothing
// keeps the entry, so that the next request alone asks the store again; otherwise the
// identity is forgotten.
func (c *denialCache) settle(id string, policies []Policy, cost int64, clock Clock, out []PolicyResult, err error) {
	if err == nil && c.remember(id, policies, cost, clock, out) {
		return
	}
	now := clock.Now()
	sh := c.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	k := keyOfDenial(id, policies)
	d := sh.entries[k]
	if d == nil || !samePolicies(d.of, policies) {
		return
	}
	if err == nil && exhausted(policies, out) {
		d.refreshing, d.until = false, now
		return
	}
	delete(sh.entries, k)
}

// exhausted reports whether an admitted request left an enforced policy nothing.
func exhausted(policies []Policy, out []PolicyResult) bool {
	for i := range out {
		if !policies[i].Shadow && out[i].Allowed && out[i].Remaining <= 0 {
			return true
		}
	}
	return false
}

// remember records the store's answer to a request of cost from id, when it is a denial with a
// Retry-After, and reports whether it did. It reads the clock only then: an admission costs a
// loop over its results and nothing more.
func (c *denialCache) remember(id string, policies []Policy, cost int64, clock Clock, out []PolicyResult) bool {
	var wait time.Duration
	for i := range out {
		if out[i].Allowed || policies[i].Shadow {
			continue
		}
		// An in-flight slot comes back when a request ends, which no RetryAfter foretells.
		if out[i].RetryAfter == Never || out[i].RetryAfter <= 0 || policies[i].holds() {
			return false
		}
		wait = max(wait, out[i].RetryAfter)
	}
	if wait == 0 {
		return false
	}
	now := clock.Now()
	of := make([]*compiledPolicy, len(policies))
	for i := range policies {
		of[i] = policies[i].compiled
	}
	d := &denial{of: of, at: now, until: now.Add(wait), cost: cost, results: append([]PolicyResult(nil), out...)}
	sh := c.shard(id)
	sh.mu.Lock()
	if len(sh.entries) >= c.max {
		sh.makeRoom(now)
	}
	sh.entries[keyOfDenial(id, policies)] = d
	sh.mu.Unlock()
	return true
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
	seen, freed := 0, false
	var victim denialKey
	for k, d := range sh.entries { // map iteration starts at a random entry
		if !now.Before(d.until) {
			delete(sh.entries, k)
			freed = true
		}
		victim = k
		if seen++; seen >= sample {
			break
		}
	}
	if !freed && seen > 0 {
		delete(sh.entries, victim)
	}
}
