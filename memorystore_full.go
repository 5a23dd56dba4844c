package ratelimit

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// What the memory store does at its bound (see [NewMemoryStore]). When a shard is full of
// state that has not expired, a new identity must not be refused (a flood of fresh keys would
// lock every newcomer out) and no identity that has used its quota may be forgotten (that
// would hand it a fresh one). So the store first forgets the least-used state among a sample of
// the shard, if that state has used less than half its capacity; and if none has, it decides
// the new identity on the shard's overflow quota, which every identity it cannot hold shares.

// evictSample is how many entries of a full shard are weighed to find the least used.
const evictSample = 16

// overflowIdentity is the identity of a shard's overflow quota, in the form of the store's own
// keys (see appendIdentity): the byte 2 after it says that no client's identity, which ends
// in 0 or 1, can be it.
const overflowIdentity = "overflow\x02"

// fullness is what a memory store tells of its bound: the evictions and overflow decisions
// since it was made, and when it last logged them.
type fullness struct {
	evicted    atomic.Int64
	overflowed atomic.Int64
	logged     atomic.Int64 // Unix second of the last line; 0: never
	lastEv     atomic.Int64 // evicted at the last line
	lastOv     atomic.Int64 // overflowed at the last line
}

// fullLogEvery is how often a store that stays full says so again.
const fullLogEvery = 60

// evict forgets the least-used entry among a sample of sh, if it has used less than half its
// capacity, and reports whether it did. It never forgets an entry of keep. An in-flight limit's
// entry is weighed like any other: forgetting one that holds less than half its slots lets
// its identity hold that many more at once. The caller holds sh.mu.
func (s *memoryStore) evict(sh *memoryShard, keep []checked, now int64) bool {
	var (
		victim string
		least  = 2.0 // more than any share
		seen   int
		state  algo.State
		result algo.Result
	)
	for k, e := range sh.entries { // map iteration starts at a random entry
		if e.policy == nil || holds(keep, e) {
			continue
		}
		if e.expires <= now { // already gone: dropping it forgets no identity
			sh.remove(k, e)
			return true
		}
		if e.overflow { // what limits the identities the shard cannot hold: kept
			continue
		}
		if used := usedShare(e, now, &state, &result); used < least {
			victim, least = k, used
		}
		if seen++; seen >= evictSample {
			break
		}
	}
	if victim == "" || least >= 0.5 {
		return false
	}
	sh.remove(victim, sh.entries[victim])
	s.full.evicted.Add(1)
	if s.observer != nil {
		s.observer.memoryStoreFull(false)
	}
	return true
}

// usedShare is how much of its capacity the live entry e has used, as evict weighs it (state
// and result are the caller's scratch). A calendar period's entry is weighed apart: once its
// period has ended it is free (it outlives its end by a grace, and at every boundary each
// returning identity needs a key for the new period, which the ended ones must make room for);
// while its period runs, any count makes it unforgettable (more than any share), since
// forgetting it would hand its identity a fresh day, month or year.
func usedShare(e *memoryEntry, now int64, state *algo.State, result *algo.Result) float64 {
	p := e.policy
	if p.cal != nil {
		switch {
		case now >= p.params.Start+p.params.Window:
			return 0
		case e.state.Init && e.state.B > 0:
			return 2
		}
		return 0
	}
	*state = e.state // the model reads a copy; a check of cost 0 moves nothing
	p.model.Check(&p.params, state, now, 0, result)
	capacity := p.params.Capacity()
	return float64(capacity-result.Remaining) / float64(capacity)
}

// roomFor reports whether makeRoom would find room for need entries more in sh, without
// making it: the entries of keep stay, the expired ones would go, and so would those of a
// sample that used less than half their capacity, as evict weighs them. A check that charges
// nothing (Peek, a cost of 0) of an identity a full shard cannot hold then answers from the
// overflow quota, which a charge would be decided on. The caller holds sh.mu.
func (s *memoryStore) roomFor(sh *memoryShard, need int, keep []checked, now int64) bool {
	if sh.room(need, s.perShard) {
		return true
	}
	var (
		free, seen int
		state      algo.State
		result     algo.Result
	)
	held := len(sh.entries) - sh.overflowKeys
	for _, e := range sh.entries {
		if e.policy == nil || e.overflow || holds(keep, e) {
			continue
		}
		if e.expires <= now {
			free++
		} else {
			if usedShare(e, now, &state, &result) < 0.5 {
				free++
			}
			seen++
		}
		if held-free == 0 || held-free+need <= s.perShard {
			return true
		}
		if seen >= evictSample {
			break
		}
	}
	return false
}

// overflow decides a check that found no room on the shard's overflow quota: the same policies,
// under the identity overflowIdentity, charged when it allows. Its entries are not bounded by
// the shard's room: there is one per policy of the application. The caller holds sh.mu.
func (s *memoryStore) overflow(sh *memoryShard, policies []Policy, cost int64, now int64, out []PolicyResult) {
	s.full.overflowed.Add(1)
	if s.observer != nil {
		s.observer.memoryStoreFull(true)
	}
	sh.onOverflow(policies, cost, true, now, out)
}

// onOverflow runs a check on the shard's overflow quota, charging it when charge is set and
// every policy allows, and marks the results as its. The caller holds sh.mu.
func (sh *memoryShard) onOverflow(policies []Policy, cost int64, charge bool, now int64, out []PolicyResult) {
	var buf [len(overflowIdentity) + 16]byte
	id := append(buf[:0], overflowIdentity...)
	checks, all := sh.evaluate(id, policies, cost, now, out)
	for i := range out {
		out[i].overflow = true
	}
	if !all || !charge || cost == 0 {
		return
	}
	sh.charge(id, policies, checks, cost, now, out)
	for i := range checks {
		if e := checks[i].entry; e != nil && !e.overflow {
			e.overflow = true
			sh.overflowKeys++
		}
	}
}

// overflowQuota declares that the store decides the identities it cannot hold on its shards'
// overflow quotas (see overflowStore).
func (s *memoryStore) overflowQuota() Store { return overflowQuota{s} }

// overflowQuota is a memory store seen through the overflow quota of each key's shard: the
// store on which what a decision made there charged is refunded, and its slots released and
// renewed (a decision says so in its results: PolicyResult.overflow).
type overflowQuota struct{ *memoryStore }

// Check runs a check on the overflow quota of key's shard, as the store's Check runs one on
// the state of key (a decision of a lease's give-back reports what the quota has left).
func (q overflowQuota) Check(ctx context.Context, key string, policies []Policy, cost int64, charge bool, out []PolicyResult) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	if err := compiledAll(policies); err != nil {
		return time.Time{}, err
	}
	sh := q.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := q.clock.Now()
	sh.onOverflow(policies, cost, charge, t.UnixMicro(), out)
	return t, nil
}

// overdraw charges cost on the overflow quota of key's shard to the policies of mask beyond
// their capacity: a settle above its estimate of a decision made there (see Limiter.Settle).
func (q overflowQuota) overdraw(ctx context.Context, key string, policies []Policy, mask uint64, cost int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := compiledAll(policies); err != nil {
		return err
	}
	sh := q.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var buf [len(overflowIdentity) + 16]byte
	sh.overdraw(append(buf[:0], overflowIdentity...), policies, mask, cost, q.clock.Now().UnixMicro())
	return nil
}

func (q overflowQuota) Refund(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) error {
	return q.refund(ctx, key, []byte(overflowIdentity), policies, cost, at)
}

func (q overflowQuota) Renew(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) (time.Time, error) {
	return q.renew(ctx, key, []byte(overflowIdentity), true, policies, cost, at)
}

// report logs, once and then at most once a minute while it lasts, that the store is full.
func (s *memoryStore) report(now time.Time) {
	f := &s.full
	sec, last := now.Unix(), f.logged.Load()
	if last != 0 && sec-last < fullLogEvery || !f.logged.CompareAndSwap(last, sec) {
		return
	}
	ev, ov := f.evicted.Load(), f.overflowed.Load()
	store := "the memory store"
	if s.of != "" {
		store = "the memory store of " + s.of
	}
	msg := "ratelimit: " + store + " is full: it forgets the least-used state (under half its limit) to serve new identities, and decides those it cannot hold on a shared overflow quota"
	if last != 0 {
		msg = "ratelimit: " + store + " is still full"
	}
	s.log.get().LogAttrs(context.Background(), slog.LevelWarn, msg,
		slog.Int("max_keys", s.perShard*memoryShards),
		slog.Int64("evicted", ev-f.lastEv.Swap(ev)), slog.Int64("overflow_decisions", ov-f.lastOv.Swap(ov)))
}
