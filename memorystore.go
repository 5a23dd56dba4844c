package ratelimit

import (
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
}

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
// [WithMaxKeys]): when a shard is full, the store first drops expired keys and then, if it
// must, the key closest to expiring among a sample. A flood of new identities therefore cannot
// grow memory past the bound.
func NewMemoryStore(opts ...Option) Store {
	c := newStoreConfig("NewMemoryStore", opts)
	s := &memoryStore{seed: maphash.MakeSeed(), prefix: c.prefix, clock: c.clock, perShard: max(1, c.maxKeys/memoryShards)}
	if s.clock == nil {
		s.clock = defaultClock
	}
	for i := range s.shards {
		s.shards[i].entries = make(map[string]*memoryEntry)
	}
	return s
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
		all = all && r.Allowed
	}
	if !all || !charge || cost == 0 {
		return t, nil
	}
	for i := range policies {
		p := &policies[i]
		state, ttl := p.compiled.model.Charge(p.compiled.params, states[i], now, cost)
		e := ents[i]
		if e == nil {
			e = &memoryEntry{}
			ents[i] = e
			s.insert(sh, string(appendKey(buf[:0], s.prefix, key, p.tag())), e, now, ents)
		}
		e.state, e.expires = state, now+max(ttl, 1)
	}
	return t, nil
}

// insert adds a new entry, keeping the shard within its bound, and never dropping the entries
// of the check under way (keep). The caller holds sh.mu.
func (s *memoryStore) insert(sh *memoryShard, k string, e *memoryEntry, now int64, keep []*memoryEntry) {
	sh.writes++
	if len(sh.entries) >= s.perShard || sh.writes%16 == 0 {
		s.sweep(sh, now, len(sh.entries) >= s.perShard, keep)
	}
	sh.entries[k] = e
}

// sweep drops expired entries among a sample of the shard; when the shard must make room and
// none had expired, it drops the sampled entry closest to expiring. It leaves the entries of
// keep alone.
func (s *memoryStore) sweep(sh *memoryShard, now int64, makeRoom bool, keep []*memoryEntry) {
	const sample = 32
	var (
		victim    string
		victimExp int64
		seen      int
		dropped   bool
	)
	for k, e := range sh.entries { // map iteration starts at a random entry
		if slices.Contains(keep, e) {
			continue
		}
		if e.expires <= now {
			delete(sh.entries, k)
			dropped = true
		} else if victim == "" || e.expires < victimExp {
			victim, victimExp = k, e.expires
		}
		if seen++; seen >= sample {
			break
		}
	}
	if makeRoom && !dropped && victim != "" {
		delete(sh.entries, victim)
	}
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
