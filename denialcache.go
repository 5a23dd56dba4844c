package ratelimit

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// denialCache remembers identities the store denied until a known time, and answers their
// requests itself until then: a flood from one identity costs the store one call per
// Retry-After (the one that asks again when the denial ends) instead of one per request.
//
// It caches only what it can answer as the store would: a denial by a policy whose model says
// its Retry-After is exact (algo.Model.ExactWait: nothing but time admits the same cost
// sooner, or a larger one; not the sliding counter, whose wait is an upper bound) and that
// does not opt out (Policy.NoDenialCache), in a list without an in-flight limit (its slots
// come back when requests end, and its result would go stale). Such a denial is answered until the latest Retry-After of those
// policies, counted from the time read before the store was asked, which is no later than the
// store's own; and only for the policy list it was denied under and a cost at least the one
// denied. It never admits, so it never admits what the store would deny. What can end a
// denial sooner is a refund, a reset or a charge under other limits of the same state: made
// through this process, each forgets the identity at once (a limit changed here is another
// compiled list, which the cache does not answer). A refund or a reset made by another
// instance or by the ratelimit command is announced, and forgets the identity a message later
// (see forgets.go); a limit another instance runs differently is seen only when the cached
// denial ends, so that denial may last longer than needed.
//
// Memory is bounded: at most max denials per shard, each holding the policies' results.
type denialCache struct {
	seed   maphash.Seed
	shards [denialShards]denialShard
	max    int // denials per shard
	// live is set while the store hears the fleet's refunds and resets (see forgets.go): only
	// then is a new denial remembered.
	live atomic.Bool
}

const denialShards = 16

// maxListsPerIdentity bounds the policy lists one identity has denials under (one per
// limiter that checks it: a few at most).
const maxListsPerIdentity = 4

type denialShard struct {
	mu      sync.Mutex
	entries map[string][]*denial // by identity, one per policy list
	n       int                  // denials held
	// epoch counts the forgets of the shard: a check whose denial comes back after a refund
	// or a reset of its identity began is not remembered (see answer and remember).
	epoch uint64
}

// denial is what the store answered, and when.
type denial struct {
	// who is the identity denied. The cache files denials by the identity as storage keys
	// hold it (see storedIdentity), which is how announcements name it; for compact keys that
	// is a short digest, which other identities may share: a denial answers only its own.
	who     string
	of      []*compiledPolicy // the list it was denied under
	at      int64             // when the store was asked, on the cache's clock, in Unix µs
	until   int64             // at plus the Retry-After of the policies the cache may answer for
	cost    int64
	results []PolicyResult
	// refreshing is when (Unix µs, on the cache's clock) a request last went to ask the store
	// again, its denial over, and 0 when none is asking: the others are still answered from the
	// cache meanwhile, so a flood sends one request at a time, and one more each
	// refreshPatience while none has answered (see answer).
	refreshing int64
	// spent is set for the denial an admission of cost 1 foretold (see spent): it answers
	// requests of cost 1 alone, whose Retry-After it knows.
	spent bool
}

// refreshPatience bounds how long the cache goes on denying an identity whose denial is over
// while the one request that asks the store again has no answer: a request that comes later
// asks too. So an ended denial outlives its Retry-After by at most that much, however long a
// call takes (a slow Redis, a call's goroutine that waits for a core, one whose answer never
// comes back to the cache): at 100 requests a second, a tenth of one.
const refreshPatience = time.Millisecond

// asking reports whether, at us, a request still asks the store again for d (see refreshing):
// it went less than refreshPatience ago (on a clock that went back, it is taken for gone).
func (d *denial) asking(us int64) bool {
	return d.refreshing != 0 && us >= d.refreshing && us-d.refreshing < refreshPatience.Microseconds()
}

// defaultDenialCache is the Redis store's denial cache unless WithDenialCache says otherwise.
const defaultDenialCache = 10_000

func newDenialCache(entries int) *denialCache {
	c := &denialCache{seed: maphash.MakeSeed(), max: max(1, entries/denialShards)}
	for i := range c.shards {
		c.shards[i].entries = map[string][]*denial{}
	}
	return c
}

func (c *denialCache) shard(id string) *denialShard {
	return &c.shards[maphash.String(c.seed, id)%denialShards]
}

// find returns the denial of who, filed under id, under policies, and its index among id's;
// nil when there is none. The caller holds sh.mu.
func (sh *denialShard) find(id, who string, policies []Policy) (*denial, int) {
	for i, d := range sh.entries[id] {
		if d.who == who && samePolicies(d.of, policies) {
			return d, i
		}
	}
	return nil, -1
}

// asked is a request the denial cache is asked about: of cost from who (filed under id), under
// policies, at time at (read before the store is asked, so no later than the store's time),
// charged or only looked at (Peek), in the shard's epoch that answer read.
type asked struct {
	id, who  string
	policies []Policy
	cost     int64
	at       time.Time
	charge   bool
	epoch    uint64
}

// answer fills out with the cached denial of q, as the store would answer it at q.at, and
// reports whether it did. When the denial is over, the first request to come goes to the
// store (refresh: settle must follow its answer) and the others are still denied from the
// cache until it has, or until refreshPatience has passed since it went: the next request then
// goes too. It sets q.epoch to the shard's, for remember or settle.
func (c *denialCache) answer(q *asked, out []PolicyResult) (hit, refresh bool) {
	sh := c.shard(q.id)
	sh.mu.Lock()
	q.epoch = sh.epoch
	// In whole µs, as the store computes: with the store's clock, the answer is the store's.
	us := q.at.UnixMicro()
	d, _ := sh.find(q.id, q.who, q.policies)
	if d == nil || q.cost < d.cost || d.spent && q.cost != 1 || us < d.at { // us < d.at: an injected clock went back
		sh.mu.Unlock()
		return false, false
	}
	if us >= d.until && !d.asking(us) {
		d.refreshing = max(us, 1) // 0 says none
		sh.mu.Unlock()
		return false, true
	}
	elapsed := time.Duration(us-d.at) * time.Microsecond
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

// settle records the store's answer to q, a request that refreshed a denial (see answer), or
// err when the store failed: a new denial replaces the old; an admission that left nothing
// keeps the entry, so that the next request alone asks the store again; otherwise the denial
// is forgotten.
func (c *denialCache) settle(q *asked, out []PolicyResult, err error) {
	if err == nil && c.remember(q, out) {
		return
	}
	sh := c.shard(q.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	d, i := sh.find(q.id, q.who, q.policies)
	if d == nil {
		return
	}
	if err == nil && exhausted(q.policies, out) {
		d.refreshing, d.at, d.until = 0, q.at.UnixMicro(), q.at.UnixMicro()
		return
	}
	sh.drop(q.id, i)
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

// exactWait returns the longest Retry-After of the policies that deny out and whose denial may
// be answered until it: their model says the wait is exact, NoDenialCache is unset, and it
// ends (not Never); 0 when none does. ok is false for a list with an in-flight limit, whose
// slots come back when requests end: no answer of it may be kept. The denial cache and the
// quota leases answer denials by it.
func exactWait(policies []Policy, out []PolicyResult) (wait time.Duration, ok bool) {
	for i := range out {
		p := &policies[i]
		if p.holds() {
			return 0, false
		}
		if out[i].Allowed || p.Shadow || !p.compiled.cached || out[i].RetryAfter == algorithms.Never {
			continue // it decides nothing, or its denial may end before its Retry-After
		}
		wait = max(wait, out[i].RetryAfter)
	}
	return wait, true
}

// remember records the store's answer out to q, when it is a denial the cache may answer (see
// denialCache) or a charged admission that foretells one (see spent), and no refund or reset
// of the identity began since q.epoch, and reports whether it did. An admission that
// foretells nothing costs a loop over its results and nothing more.
func (c *denialCache) remember(q *asked, out []PolicyResult) bool {
	if !c.live.Load() {
		return false // a refund or a reset elsewhere could go unheard
	}
	policies := q.policies
	wait, ok := exactWait(policies, out)
	if !ok {
		return false
	}
	var results []PolicyResult
	foretold := wait <= 0 // an admission: the denial it foretells, if any
	if foretold {
		if !q.charge || q.cost != 1 || !allAdmitted(policies, out) {
			return false // a look (Peek) leaves the state as it was: it foretells nothing
		}
		if wait, results = spent(policies, out); wait <= 0 {
			return false
		}
	} else {
		results = append([]PolicyResult(nil), out...)
	}
	of := make([]*compiledPolicy, len(policies))
	for i := range policies {
		of[i] = policies[i].compiled
	}
	us := q.at.UnixMicro()
	d := &denial{who: q.who, of: of, at: us, until: us + wait.Microseconds(), cost: q.cost, results: results, spent: foretold}
	sh := c.shard(q.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.epoch != q.epoch {
		return false // a refund or a reset began while the store was asked
	}
	if old, i := sh.find(q.id, q.who, policies); old != nil {
		sh.entries[q.id][i] = d
		return true
	}
	if sh.n >= c.max {
		sh.makeRoom(us)
	}
	list := sh.entries[q.id]
	if len(list) >= maxListsPerIdentity {
		sh.drop(q.id, 0) // the oldest list
		list = sh.entries[q.id]
	}
	sh.entries[q.id] = append(list, d)
	sh.n++
	return true
}

// spent returns, for a request of cost 1 that every enforced policy admitted, how long the
// store will deny the next request of cost 1, and the results it will answer meanwhile: a
// policy whose model says its wait is exact and that the request left nothing admits nothing
// for its EffectiveWindow, the time until one unit more fits. The denial lasts the longest of
// those; each such policy's result is a denial whose Retry-After is its EffectiveWindow, the
// others' are as the admission left them. It returns 0 when the request left every such
// policy something, or left nothing to a policy whose wait is not exact (which may admit
// sooner: nothing is foretold).
func spent(policies []Policy, out []PolicyResult) (time.Duration, []PolicyResult) {
	var wait time.Duration
	for i := range out {
		p := &policies[i]
		if p.Shadow || out[i].Remaining > 0 {
			continue
		}
		if !p.compiled.cached || out[i].EffectiveWindow <= 0 {
			return 0, nil
		}
		wait = max(wait, out[i].EffectiveWindow)
	}
	if wait <= 0 {
		return 0, nil
	}
	results := append([]PolicyResult(nil), out...)
	for i := range results {
		if r := &results[i]; !policies[i].Shadow && r.Remaining <= 0 {
			r.Allowed, r.RetryAfter = false, r.EffectiveWindow
		}
	}
	return wait, results
}

// allAdmitted reports whether every enforced policy admitted a request.
func allAdmitted(policies []Policy, out []PolicyResult) bool {
	for i := range out {
		if !out[i].Allowed && !policies[i].Shadow {
			return false
		}
	}
	return true
}

// charged drops the denials of id when a request of id was admitted and charged (a cheaper
// one than a denial's, or under another list): the identity is still denied as long, but the
// denials' results (Remaining, the Retry-After of a larger cost) are no longer the store's.
// A refreshing denial is left to settle.
func (c *denialCache) charged(id string) {
	sh := c.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	list := sh.entries[id]
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].refreshing == 0 {
			sh.drop(id, i)
			list = sh.entries[id]
		}
	}
}

// forget drops every denial of id, under any policy list: a refund or a reset of some of its
// policies may end a denial under any list that holds one of them. It implements [forgetter]:
// id is the identity as storage keys hold it (see storedIdentity), as everywhere in the cache.
func (c *denialCache) forget(id string) {
	sh := c.shard(id)
	sh.mu.Lock()
	sh.n -= len(sh.entries[id])
	delete(sh.entries, id)
	sh.epoch++
	sh.mu.Unlock()
}

// subscribed implements [forgetter]: when the store hears announcements again, every denial is
// forgotten (one may have been missed) before new ones are remembered.
func (c *denialCache) subscribed(on bool) {
	if on {
		for i := range c.shards {
			sh := &c.shards[i]
			sh.mu.Lock()
			clear(sh.entries)
			sh.n = 0
			sh.epoch++
			sh.mu.Unlock()
		}
	}
	c.live.Store(on)
}

// drop forgets the i-th denial of id. The caller holds sh.mu.
func (sh *denialShard) drop(id string, i int) {
	list := sh.entries[id]
	if len(list) == 1 {
		delete(sh.entries, id)
	} else {
		sh.entries[id] = append(list[:i:i], list[i+1:]...)
	}
	sh.n--
}

// makeRoom drops the ended denials among a sample of identities, or else one identity's:
// forgetting a denial only sends the identity's next request to the store. The caller holds
// sh.mu.
func (sh *denialShard) makeRoom(now int64) {
	const sample = 16
	seen, freed := 0, false
	var victim string
	for id, list := range sh.entries { // map iteration starts at a random entry
		for i := len(list) - 1; i >= 0; i-- {
			if now >= list[i].until && !list[i].asking(now) {
				sh.drop(id, i)
				list = sh.entries[id]
				freed = true
			}
		}
		victim = id
		if seen++; seen >= sample {
			break
		}
	}
	if !freed && seen > 0 {
		sh.n -= len(sh.entries[victim])
		delete(sh.entries, victim)
	}
}

// len returns how many denials the cache holds.
func (c *denialCache) len() int {
	n := 0
	for i := range c.shards {
		c.shards[i].mu.Lock()
		n += c.shards[i].n
		c.shards[i].mu.Unlock()
	}
	return n
}
