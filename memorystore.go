package ratelimit

import (
	"cmp"
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

const memoryShards = 64

// memoryStore keeps rate-limit state in this process. See [NewMemoryStore].
type memoryStore struct {
	shards   [memoryShards]memoryShard
	seed     maphash.Seed
	prefix   string
	clock    Clock
	perShard int
}

var _ Store = (*memoryStore)(nil)

type memoryShard struct {
	mu      sync.Mutex
	entries map[string]*memoryEntry
	writes  uint32
	// soonest, once the shard has been found full, are the keys that expire first, the
	// soonest last: room is made by dropping them as they expire, without another scan.
	soonest []expiring
}

// expiring is a key and the time its state expired when the shard was scanned.
type expiring struct {
	key string
	at  int64
}

// soonestKept is how many keys a scan of a full shard remembers as the next to expire.
const soonestKept = 64

type memoryEntry struct {
	state   algo.State
	expires int64 // microseconds; the state is gone from then on
}

// NewMemoryStore returns an empty store that keeps rate-limit state in this process: the
// embedded default, for one instance or for tests. It runs the same algorithms as the Redis
// store, to the same results. Options: [WithClock], [WithMaxKeys], [WithPrefix]; NewMemoryStore
// panics if one is invalid or configures a guard.
//
// It is safe for concurrent use. All keys of one identity live in one of 64 shards under one
// lock, so a policy list is checked atomically. Expired state is dropped as the store is used
// (no background goroutine, nothing to close). The number of keys is bounded (see
// [WithMaxKeys]) and live state is never evicted, since dropping it would hand its identity a
// fresh quota: when a shard is full of live state, a request of a new identity is refused (its
// decision denies it, with the time until room frees as RetryAfter) until state expires. A
// flood of new identities can therefore neither grow memory past the bound nor reset anyone's
// quota.
func NewMemoryStore(opts ...Option) Store {
	c := newStoreConfig("NewMemoryStore", true, opts)
	s := &memoryStore{seed: maphash.MakeSeed(), prefix: c.prefix, clock: c.clock, perShard: max(1, c.maxKeys/memoryShards)}
	if s.clock == nil {
		s.clock = defaultClock
	}
	for i := range s.shards {
		s.shards[i].entries = make(map[string]*memoryEntry)
	}
	return resilient(s, c)
}

// Local declares that the store answers without I/O (see [Store]).
func (s *memoryStore) Local() bool { return true }

// Clock declares the store's clock (see [Store]).
func (s *memoryStore) Clock() Clock { return s.clock }

func (s *memoryStore) shard(key string) *memoryShard {
	return &s.shards[maphash.String(s.seed, key)%memoryShards]
}

// len returns the number of keys the store holds, expired ones not yet dropped included.
func (s *memoryStore) len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.entries)
		sh.mu.Unlock()
	}
	return n
}

// Check implements [Store].
func (s *memoryStore) Check(ctx context.Context, key string, policies []Policy, cost int64, charge bool, out []PolicyResult) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	if err := compiledAll(policies); err != nil {
		return time.Time{}, err
	}
	sh := s.shard(key)
	var (
		buf     [160]byte
		inline  [4]algo.State
		entries [4]*memoryEntry
	)
	states, ents := inline[:0], entries[:0]
	if len(policies) > len(inline) {
		states, ents = make([]algo.State, 0, len(policies)), make([]*memoryEntry, 0, len(policies))
	}

	sh.mu.Lock()
	defer sh.mu.Unlock()
	// The time is read under the lock, so the checks of one identity see it in order.
	t := s.clock.Now()
	now := t.UnixMicro()
	all := true
	for i := range policies {
		p := &policies[i]
		e := sh.entries[string(appendKey(buf[:0], s.prefix, key, p.tag()))]
		var state algo.State
		if e != nil && e.expires > now {
			state = e.state
		} else if e != nil {
			state.Log = e.state.Log[:0] // expired: reuse the log's memory
		}
		// Like the Redis store, keep nothing of a check that charges nothing.
		var r algo.Result
		r, state = p.compiled.model.Check(p.compiled.params, state, now, cost)
		out[i].set(r)
		states, ents = append(states, state), append(ents, e)
		all = all && (r.Allowed || p.Shadow) // a shadow policy never decides
	}
	if !all || !charge || cost == 0 {
		return t, nil
	}
	need := 0
	for i, e := range ents {
		if e == nil && (!policies[i].Shadow || out[i].Allowed) {
			need++
		}
	}
	if wait := s.makeRoom(sh, need, ents, now); wait > 0 {
		for i := range out {
			out[i].setMicros(false, 0, wait, wait, 0)
		}
		return t, nil
	}
	for i := range policies {
		p := &policies[i]
		if p.Shadow && !out[i].Allowed {
			continue // what it would have refused is not charged to it
		}
		state, ttl := p.compiled.model.Charge(p.compiled.params, states[i], now, cost)
		e := ents[i]
		if e == nil {
			e = &memoryEntry{}
			ents[i] = e
			sh.entries[string(appendKey(buf[:0], s.prefix, key, p.tag()))] = e
		}
		e.state, e.expires = state, now+max(ttl, 1)
	}
	return t, nil
}

// makeRoom makes room in sh for need new entries of a check, dropping expired state only, and
// never the check's own entries (ents). It returns 0 when there is room, or else how many
// microseconds until state is due to expire. The caller holds sh.mu.
func (s *memoryStore) makeRoom(sh *memoryShard, need int, ents []*memoryEntry, now int64) int64 {
	if need == 0 {
		return 0
	}
	sh.writes++
	if sh.writes%16 == 0 {
		sh.sweep(now, ents) // housekeeping: expired state goes as the store is used
	}
	room := func() bool { return len(sh.entries) == 0 || len(sh.entries)+need <= s.perShard }
	if room() {
		return 0
	}
	for len(sh.soonest) > 0 && !room() {
		c := sh.soonest[len(sh.soonest)-1]
		if c.at > now {
			return c.at - now
		}
		sh.soonest = sh.soonest[:len(sh.soonest)-1]
		if e := sh.entries[c.key]; e != nil && e.expires <= now && !slices.Contains(ents, e) {
			delete(sh.entries, c.key)
		}
	}
	if room() {
		return 0
	}
	sh.scan(now, ents)
	if room() {
		return 0
	}
	if len(sh.soonest) == 0 {
		return int64(time.Second / time.Microsecond) // only the check's own entries: cannot be
	}
	return max(sh.soonest[len(sh.soonest)-1].at-now, 1)
}

// sweep drops the expired entries among a sample of the shard, except those of keep. The
// caller holds sh.mu.
func (sh *memoryShard) sweep(now int64, keep []*memoryEntry) {
	const sample = 32
	seen := 0
	for k, e := range sh.entries { // map iteration starts at a random entry
		if e.expires <= now && !slices.Contains(keep, e) {
			delete(sh.entries, k)
		}
		if seen++; seen >= sample {
			break
		}
	}
}

// scan drops every expired entry of the shard, except those of keep, and remembers the keys
// that expire first among the rest. The caller holds sh.mu.
func (sh *memoryShard) scan(now int64, keep []*memoryEntry) {
	live := make([]expiring, 0, len(sh.entries))
	for k, e := range sh.entries {
		switch {
		case slices.Contains(keep, e):
		case e.expires <= now:
			delete(sh.entries, k)
		default:
			live = append(live, expiring{k, e.expires})
		}
	}
	slices.SortFunc(live, func(a, b expiring) int { return cmp.Compare(a.at, b.at) })
	live = live[:min(len(live), soonestKept)]
	slices.Reverse(live) // the soonest last
	sh.soonest = append(sh.soonest[:0], live...)
}

// Refund implements [Store].
func (s *memoryStore) Refund(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := compiledAll(policies); err != nil {
		return err
	}
	sh := s.shard(key)
	var buf [160]byte
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.clock.Now().UnixMicro()
	for i := range policies {
		p := &policies[i]
		k := appendKey(buf[:0], s.prefix, key, p.tag())
		e := sh.entries[string(k)]
		if e == nil {
			continue
		}
		// As the script does: leave unchanged state alone, drop state that is back to fresh.
		state, ttl := p.compiled.model.Refund(p.compiled.params, e.state, now, cost, at.UnixMicro())
		switch {
		case state.A == e.state.A && state.B == e.state.B && state.C == e.state.C && len(state.Log) == len(e.state.Log):
		case ttl <= 0:
			delete(sh.entries, string(k))
		default:
			e.state, e.expires = state, now+ttl
		}
	}
	return nil
}

// Renew declares that the store holds in-flight slots (see [Store]): it moves the slots that
// Check charged at time at to now, so that their leases start again.
func (s *memoryStore) Renew(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	if err := renewable(policies); err != nil {
		return time.Time{}, err
	}
	sh := s.shard(key)
	var buf [160]byte
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := s.clock.Now()
	now := t.UnixMicro()
	for i := range policies {
		p := &policies[i]
		k := appendKey(buf[:0], s.prefix, key, p.tag())
		e := sh.entries[string(k)]
		var state algo.State
		if e != nil && e.expires > now {
			state = e.state
		}
		state, ttl := p.compiled.model.(algo.Renewer).Renew(p.compiled.params, state, now, cost, at.UnixMicro())
		if e == nil { // the slot had expired and its state was dropped: the request still runs
			e = &memoryEntry{}
			sh.entries[string(k)] = e
		}
		e.state, e.expires = state, now+max(ttl, 1)
	}
	return t, nil
}

// Reset implements [Store].
func (s *memoryStore) Reset(ctx context.Context, key string, policies []Policy) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh := s.shard(key)
	var buf [160]byte
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for i := range policies {
		delete(sh.entries, string(appendKey(buf[:0], s.prefix, key, policies[i].tag())))
	}
	return nil
}
