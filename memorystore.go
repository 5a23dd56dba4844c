package ratelimit

import (
	"cmp"
	"context"
	"crypto/sha256"
	"hash/maphash"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
	"github.com/a7d3e0dd/ratelimit/observe"
)

const memoryShards = 64

// memoryStore keeps rate-limit state in this process. See [NewMemoryStore].
type memoryStore struct {
	shards   [memoryShards]memoryShard
	seed     maphash.Seed
	clock    Clock
	perShard int
	log      logs
	observer *Observer // nil: none
	full     fullness
	// of names the store in its log lines: "" for a store of its own, or what it decides for
	// (the local fallback of a Redis store).
	of string
}

var _ Store = (*memoryStore)(nil)

// memoryShard is one shard, padded to whole cache lines: two cores checking identities of two
// shards then never write to one line, which would bounce it between them on every check. The
// unit is 128 bytes, since x86 prefetches lines in pairs.
type memoryShard struct {
	shardState
	_ [(128 - unsafe.Sizeof(shardState{})%128) % 128]byte
}

// shardState is what one lock guards: the keys of the identities that hash to the shard.
type shardState struct {
	mu      sync.Mutex
	entries map[string]*memoryEntry // by key (see appendIdentity); nil until the first (see add)
	writes  uint32
	// soonest, once the shard has been found full, are the keys that expire first, the
	// soonest last: room is made by dropping them as they expire, without another scan.
	soonest []expiring
	// scratch serves the calls made under the lock, one at a time (see work).
	scratch []checked
	// overflowKeys are the entries of the shard's overflow quota among entries: they are
	// beside the bound (see room).
	overflowKeys int
	// holds are the records of the holds of Limiter.Reserve, by identity and policy list (see
	// memorystore_holds.go); nil until the first.
	holds map[string]*heldSet
}

// checked is one policy of a call under way: its entry (nil: none yet), the state its model
// works on, a copy of the entry's until the call writes it back, and the model's verdict.
type checked struct {
	entry  *memoryEntry
	state  algo.State
	result algo.Result
}

// add enters e under key. A shard's map is made with its first key: a store is cheap to make
// (a fallback makes one, and so do tests by the thousand), and most of its shards may never
// hold a key. The caller holds sh.mu.
func (sh *memoryShard) add(key string, e *memoryEntry) {
	if sh.entries == nil {
		sh.entries = make(map[string]*memoryEntry)
	}
	sh.entries[key] = e
}

// remove drops the entry e under key. The caller holds sh.mu.
func (sh *memoryShard) remove(key string, e *memoryEntry) {
	delete(sh.entries, key)
	if e.overflow {
		sh.overflowKeys--
	}
}

// room reports whether sh has room for need more entries of identities: the keys of its
// overflow quota are beside the bound. The caller holds sh.mu.
func (sh *memoryShard) room(need, perShard int) bool {
	n := len(sh.entries) - sh.overflowKeys
	return n == 0 || n+need <= perShard
}

// work returns n slots for the policies of a call under way, from the shard's scratch, which
// grows to the longest policy list the shard has served. The models work on state through
// pointers, and a buffer on the stack handed to them through their interface would move to
// the heap on every call; the shard's serves every call in turn, under its lock. The caller
// holds sh.mu.
func (sh *memoryShard) work(n int) []checked {
	if n > len(sh.scratch) {
		sh.scratch = make([]checked, n)
	}
	return sh.scratch[:n]
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
	expires int64           // microseconds; the state is gone from then on
	policy  *compiledPolicy // whose state it is: what weighs its use at the bound
	// overflow marks the state of a shard's overflow quota, which is never forgotten to make
	// room (see evict): it limits the identities the shard cannot hold.
	overflow bool
}

// NewMemoryStore returns an empty store that keeps rate-limit state in this process: the
// embedded default, for one instance or for tests. It runs the same algorithms as the Redis
// store, to the same results. Its options are the [StoreOption]s ([WithPrefix] changes
// nothing: the store's keys are its own) and [WithMaxKeys]; NewMemoryStore panics if one is
// invalid.
//
// It is safe for concurrent use. All keys of one identity live in one of 64 shards under one
// lock, so a policy list is checked atomically. Expired state is dropped as the store is used,
// a second after it expired, or at once when its shard is full (no background goroutine,
// nothing to close). The number of keys is bounded (see [WithMaxKeys]). At the bound, when a
// shard is full of live state, the store makes room for a new identity without resetting
// anyone who has used their quota and without locking newcomers out:
//
//   - it forgets the least-used state among a sample of the shard, if that state has used
//     less than half its capacity: the identity it belonged to starts afresh, so each time it
//     is forgotten it can be admitted less than half its limit more than it should;
//   - when every state sampled has used half or more, it decides the new identity on the
//     shard's overflow quota: the same policies, shared by every identity the shard cannot
//     hold, so a flood of new identities gets at most one limit per shard (64) per window
//     between them, and exhausting it refuses only identities the store could not hold. A
//     check that charges nothing ([Limiter.Peek]) of an identity it cannot hold reports
//     that quota too.
//
// It logs once when it first has to (and at most once a minute while it lasts) through
// [WithLogger], and tells its [Observer] every identity it made room for. The overflow quota
// keeps one key per policy and shard beside the bound.
func NewMemoryStore(opts ...StoreOption) Store {
	c := newStoreConfig(true)
	for _, o := range opts {
		if o == nil {
			panic("ratelimit: NewMemoryStore: an option is nil")
		}
		o.applyMemory(c)
	}
	c.done("NewMemoryStore")
	s := &memoryStore{seed: maphash.MakeSeed(), clock: c.clock, perShard: max(1, c.maxKeys/memoryShards), log: logs{c.logger}, observer: c.res.observer}
	if s.clock == nil {
		s.clock = defaultClock
	}
	return resilient(s, c)
}

// Local declares that the store answers without I/O (see [Store]).
func (s *memoryStore) Local() bool { return true }

// Clock declares the store's clock (see [Store]).
func (s *memoryStore) Clock() Clock { return s.clock }

// logger declares the store's logger (see [WithLogger]).
func (s *memoryStore) logger() logs { return s.log }

// memoryInfo describes every memory store.
var memoryInfo = &observe.StoreInfo{System: "memory"}

// info declares what the store is (see [observe.StoreInfo]).
func (s *memoryStore) info() *observe.StoreInfo { return memoryInfo }

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
	var buf [160]byte
	id := appendIdentity(buf[:0], key) // what every key of the check starts with
	sh := s.shard(key)

	sh.mu.Lock()
	defer sh.mu.Unlock()
	// The time is read under the lock, so the checks of one identity see it in order.
	t := s.clock.Now()
	s.decide(sh, id, policies, cost, charge, t, out)
	return t, nil
}

// decide is Check of identity id in its shard sh at t, under sh.mu; it reports whether it
// charged the identity's own state (not the shard's overflow quota).
func (s *memoryStore) decide(sh *memoryShard, id []byte, policies []Policy, cost int64, charge bool, t time.Time, out []PolicyResult) bool {
	now := t.UnixMicro()
	checks, all := sh.evaluate(id, policies, cost, now, out)
	need := 0
	for i := range checks {
		if checks[i].entry == nil && (!policies[i].Shadow || out[i].Allowed) {
			need++
		}
	}
	if !all || !charge || cost == 0 {
		if all && need > 0 && !s.roomFor(sh, need, checks, now) {
			// A check that charges nothing of an identity the shard could not hold: what a
			// charge would be decided on is the overflow quota. Not when the identity's own
			// state refuses it (!all): a charge is refused by that state, and the quota's
			// verdict, which may allow, is not the identity's.
			sh.onOverflow(policies, cost, false, now, out)
		}
		return false
	}
	if !s.makeRoom(sh, need, checks, now) {
		s.overflow(sh, policies, cost, now, out)
		s.report(t)
		return false
	}
	sh.charge(id, policies, checks, cost, now, out)
	if s.full.evicted.Load() != 0 {
		s.report(t)
	}
	return true
}

// evaluate runs the check of every policy on the state of identity id (see appendIdentity),
// writing each verdict to out, and returns the slots of the call, with their entries and
// states, and whether every enforced policy allows. Like the Redis store, it keeps nothing:
// the normalised state stays in the slots, for charge. The caller holds sh.mu.
func (sh *memoryShard) evaluate(id []byte, policies []Policy, cost, now int64, out []PolicyResult) ([]checked, bool) {
	checks := sh.work(len(policies))
	all := true
	for i := range policies {
		p, c := &policies[i], &checks[i]
		c.entry = sh.entries[string(append(id, p.tag()...))]
		c.state = algo.State{}
		if c.entry != nil && c.entry.expires > now {
			c.state = c.entry.state
		} else if c.entry != nil {
			c.state.Log = c.entry.state.Log[:0] // expired: reuse the log's memory
		}
		p.compiled.model.Check(&p.compiled.params, &c.state, now, cost, &c.result)
		out[i].set(&c.result)
		out[i].overflow = false                     // the identity's own state (overflow sets it for the quota's)
		all = all && (c.result.Allowed || p.Shadow) // a shadow policy never decides
	}
	return checks, all
}

// charge charges cost to every policy of an evaluated call (checks) that allowed it, making
// the entries it lacks. The caller holds sh.mu and has made room.
func (sh *memoryShard) charge(id []byte, policies []Policy, checks []checked, cost, now int64, out []PolicyResult) {
	for i := range policies {
		p, c := &policies[i], &checks[i]
		if p.Shadow && !out[i].Allowed {
			continue // what it would have refused is not charged to it
		}
		ttl := p.compiled.model.Charge(&p.compiled.params, &c.state, now, cost)
		if c.entry == nil {
			c.entry = &memoryEntry{}
			sh.add(string(append(id, p.tag()...)), c.entry)
		}
		// The policy that charged it last weighs its use at the bound: a lowered limit of the
		// same name shares the state, and weighs 6 of 10 as used, not 6 of the old 100.
		c.entry.policy, c.entry.state, c.entry.expires = p.compiled, c.state, now+max(ttl, 1)
	}
}

// appendIdentity appends to b what every key of identity id starts with in the store; each
// policy's tag follows. It is the identity and a NUL byte, or, for an identity longer than 64
// bytes, its SHA-256 digest (18 bytes) and the byte 1, so that a key stays short. The store's
// keys are its own: unlike a storage key (see [StorageKey]), which Redis reads, they need no
// prefix, no Cluster hash tag and no plain form, so the identity is copied without a scan for
// the bytes a plain form allows. Two keys cannot collide: the byte just before the tag, which
// holds neither 0 nor 1, says which form precedes it.
func appendIdentity(b []byte, id string) []byte {
	if len(id) <= maxPlainKey {
		return append(append(b, id...), 0)
	}
	sum := sha256.Sum256([]byte(id))
	return append(append(b, sum[:18]...), 1)
}

// holds reports whether e is the entry of one of checks.
func holds(checks []checked, e *memoryEntry) bool {
	for i := range checks {
		if checks[i].entry == e {
			return true
		}
	}
	return false
}

// makeRoom makes room in sh for need new entries of a check, never dropping the check's own
// entries (ents): it drops expired state, and at the bound the least-used state under half its
// capacity (see evict). It reports whether there is room. The caller holds sh.mu.
func (s *memoryStore) makeRoom(sh *memoryShard, need int, ents []checked, now int64) bool {
	if need == 0 {
		return true
	}
	sh.writes++
	if sh.writes%16 == 0 {
		sh.sweep(now, ents) // housekeeping: expired state goes as the store is used
		sh.sweepHolds(now)
	}
	room := func() bool { return sh.room(need, s.perShard) }
	if room() {
		return true
	}
	for len(sh.soonest) > 0 && !room() {
		c := sh.soonest[len(sh.soonest)-1]
		if c.at > now {
			break
		}
		sh.soonest = sh.soonest[:len(sh.soonest)-1]
		if e := sh.entries[c.key]; e != nil && e.expires <= now && !holds(ents, e) {
			sh.remove(c.key, e)
		}
	}
	if room() {
		return true
	}
	if len(sh.soonest) == 0 || sh.soonest[len(sh.soonest)-1].at <= now {
		sh.scan(now, ents)
	}
	for !room() {
		if !s.evict(sh, ents, now) {
			return false
		}
	}
	return true
}

// sweepGrace is how long after its state expired the sweep leaves an entry: an identity that
// comes back within it finds its entry and reuses it, instead of the store dropping the entry
// and allocating another, which costs more than the check itself. An entry whose state has
// expired is no state to every check, and at the bound (makeRoom) it goes at once.
const sweepGrace = int64(time.Second / time.Microsecond)

// sweep drops the entries among a sample of the shard whose state expired more than
// sweepGrace ago, except those of keep. The caller holds sh.mu.
func (sh *memoryShard) sweep(now int64, keep []checked) {
	const sample = 32
	seen := 0
	for k, e := range sh.entries { // map iteration starts at a random entry
		if e.expires <= now-sweepGrace && !holds(keep, e) {
			sh.remove(k, e)
		}
		if seen++; seen >= sample {
			break
		}
	}
}

// scan drops every expired entry of the shard, except those of keep, and remembers the keys
// that expire first among the rest. The caller holds sh.mu.
func (sh *memoryShard) scan(now int64, keep []checked) {
	live := make([]expiring, 0, len(sh.entries))
	for k, e := range sh.entries {
		switch {
		case holds(keep, e):
		case e.expires <= now:
			sh.remove(k, e)
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
	var buf [160]byte
	return s.refund(ctx, key, appendIdentity(buf[:0], key), policies, cost, at)
}

// refund is Refund of the state of id (see appendIdentity) in the shard of key.
func (s *memoryStore) refund(ctx context.Context, key string, id []byte, policies []Policy, cost int64, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := compiledAll(policies); err != nil {
		return err
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.refund(id, policies, ^uint64(0), nil, cost, at.UnixMicro(), s.clock.Now().UnixMicro())
	return nil
}

// refund gives back cost charged at at to the policies of mask (bit i: policy i) of identity
// id, at now: to policy i at at + offs[i] (see holdOffsets; nil: at). The caller holds sh.mu.
func (sh *memoryShard) refund(id []byte, policies []Policy, mask uint64, offs []int64, cost, at, now int64) {
	work := &sh.work(1)[0].state
	for i := range policies {
		p := &policies[i]
		k := append(id, p.tag()...)
		e := sh.entries[string(k)]
		if e == nil || i < 64 && mask&(1<<i) == 0 {
			continue
		}
		// As the script does: leave unchanged state alone, drop state that is back to fresh.
		*work = e.state
		t := at
		if offs != nil {
			t += offs[i]
		}
		ttl := p.compiled.model.Refund(&p.compiled.params, work, now, cost, t)
		switch {
		case work.A == e.state.A && work.B == e.state.B && work.C == e.state.C && len(work.Log) == len(e.state.Log):
		case ttl <= 0:
			sh.remove(string(k), e)
		default:
			e.state, e.expires = *work, now+ttl
		}
	}
}

// Renew declares that the store holds in-flight slots (see [Store]): it moves the slots that
// Check charged at time at to now, so that their lifetimes start again.
func (s *memoryStore) Renew(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) (time.Time, error) {
	var buf [160]byte
	return s.renew(ctx, key, appendIdentity(buf[:0], key), false, policies, cost, at)
}

// renew is Renew of the slots of id (see appendIdentity) in the shard of key; overflow: id is
// the shard's overflow quota.
func (s *memoryStore) renew(ctx context.Context, key string, id []byte, overflow bool, policies []Policy, cost int64, at time.Time) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	if err := renewable(policies); err != nil {
		return time.Time{}, err
	}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := s.clock.Now()
	now := t.UnixMicro()
	for i := range policies {
		p := &policies[i]
		k := append(id, p.tag()...)
		e := sh.entries[string(k)]
		if e == nil { // the slot had expired and its state was dropped: the request still runs
			e = &memoryEntry{policy: p.compiled, overflow: overflow}
			sh.add(string(k), e)
			if overflow {
				sh.overflowKeys++
			}
		} else if e.expires <= now {
			e.state = algo.State{}
		}
		// Renewing always writes the state back, so the model works on the entry's own.
		ttl := p.compiled.model.(algo.Renewer).Renew(&p.compiled.params, &e.state, now, cost, at.UnixMicro())
		e.policy, e.expires = p.compiled, now+max(ttl, 1)
	}
	return t, nil
}

// Reset implements [Store].
func (s *memoryStore) Reset(ctx context.Context, key string, policies []Policy) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var buf [160]byte
	id := appendIdentity(buf[:0], key)
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for i := range policies {
		delete(sh.entries, string(append(id, policies[i].tag()...)))
	}
	delete(sh.holds, holdsKey(id, holdsTag(policies)))
	return nil
}
