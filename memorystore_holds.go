package ratelimit

import (
	"context"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// heldSet is the record of one policy list's holds of one identity in a memory store (see
// holds.go): what holds.lua keeps in the list's holds key. Its policies are those the holds
// were charged under, for the sweep, which gives back the holds of identities that never came
// back.
type heldSet struct {
	id       []byte // the identity's (see appendIdentity)
	items    []heldItem
	policies []Policy
	expires  int64 // µs: when the last of its holds expires
}

// heldItem is one hold: its id, the estimate it charged at at to the policies of mask, and
// when it expires (µs).
type heldItem struct {
	id               string
	cost, at, expire int64
	mask             uint64
	offs             []int64 // see holdOffsets
}

// holdsKey is the key of the record of id's holds under the list of tag: beside the entries'
// keys in a map of its own.
func holdsKey(id []byte, tag string) string {
	return string(id) + tag
}

// reserve declares that the store keeps holds (see holdStore).
func (s *memoryStore) reserve(ctx context.Context, key string, policies []Policy, h *hold, out []PolicyResult) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	if err := compiledAll(policies); err != nil {
		return time.Time{}, err
	}
	var buf [160]byte
	id := appendIdentity(buf[:0], key)
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := s.clock.Now()
	now := t.UnixMicro()
	hk := holdsKey(id, h.tag)
	set := sh.holds[hk]
	if set != nil {
		sh.release(id, set, now, "")
	} else if len(sh.holds) >= s.perShard && !sh.roomForHolds(now, s.perShard) {
		// As many records as the shard holds identities: the store is full, and the request
		// is decided on the overflow quota, which keeps no holds (a stranger's hold is never
		// dropped to make room).
		s.overflow(sh, policies, h.cost, now, out)
		s.report(t)
		return t, nil
	}
	if !s.decide(sh, id, policies, h.cost, true, t, out) || !allAdmitted(policies, out) {
		return t, nil // denied, or decided on the overflow quota, which keeps no holds
	}
	if set == nil {
		if sh.holds == nil {
			sh.holds = make(map[string]*heldSet)
		}
		set = &heldSet{id: append([]byte(nil), id...), policies: policies}
		sh.holds[hk] = set
	}
	item := heldItem{id: h.id, cost: h.cost, at: now, expire: now + h.life, mask: chargedMask(policies, out), offs: holdOffsets(policies, out, h.cost)}
	set.items = append(set.items, item)
	set.expires = max(set.expires, item.expire)
	return t, nil
}

// settle declares that the store keeps holds (see holdStore).
func (s *memoryStore) settle(ctx context.Context, key string, policies []Policy, h *hold, actual int64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := compiledAll(policies); err != nil {
		return false, err
	}
	var buf [160]byte
	id := appendIdentity(buf[:0], key)
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.clock.Now().UnixMicro()
	held := h.id == noRecord
	hk := holdsKey(id, h.tag)
	if set := sh.holds[hk]; set != nil {
		held = set.take(h.id) || held
		sh.release(id, set, now, "")
		if len(set.items) == 0 {
			delete(sh.holds, hk)
		}
	}
	delta := actual
	if held {
		delta = actual - h.cost
	}
	switch {
	case delta < 0:
		sh.refund(id, policies, h.mask, settleOffsets(policies, h.offs, actual), -delta, h.at.UnixMicro(), now)
	case delta > 0:
		sh.overdraw(id, policies, h.mask, delta, now)
	}
	return held, nil
}

// take removes the hold id from the set and reports whether it was there.
func (set *heldSet) take(id string) bool {
	for i := range set.items {
		if set.items[i].id == id {
			set.items[i] = set.items[len(set.items)-1]
			set.items = set.items[:len(set.items)-1]
			return true
		}
	}
	return false
}

// release gives back, whole, the holds of set that expired by now, but skip's. The caller
// holds sh.mu.
func (sh *memoryShard) release(id []byte, set *heldSet, now int64, skip string) {
	kept := set.items[:0]
	for _, it := range set.items {
		if it.expire > now || it.id == skip {
			kept = append(kept, it)
			continue
		}
		sh.refund(id, set.policies, it.mask, it.offs, it.cost, it.at, now)
	}
	clear(set.items[len(kept):])
	set.items = kept
}

// overdraw charges cost at now to the policies of mask of identity id whatever their capacity
// (see overdraw in holds.lua): the model charges it on the state its check of nothing left. A
// sliding log is charged at most its capacity. The caller holds sh.mu.
func (sh *memoryShard) overdraw(id []byte, policies []Policy, mask uint64, cost, now int64) {
	var r algo.Result
	for i := range policies {
		if i < 64 && mask&(1<<i) == 0 {
			continue
		}
		p := &policies[i]
		c := cost
		if algo.KeepsLog(p.compiled.model) {
			c = min(cost, p.compiled.params.Limit)
		}
		k := string(append(id, p.tag()...))
		e := sh.entries[k]
		var st algo.State
		if e != nil && e.expires > now {
			st = e.state
		}
		p.compiled.model.Check(&p.compiled.params, &st, now, 0, &r)
		ttl := p.compiled.model.Charge(&p.compiled.params, &st, now, c)
		if e == nil {
			e = &memoryEntry{}
			sh.add(k, e)
		}
		e.policy, e.state, e.expires = p.compiled, st, now+max(ttl, 1)
	}
}

// roomForHolds drops the records of holds that all expired, giving them back, and reports
// whether fewer than bound are left. The caller holds sh.mu.
func (sh *memoryShard) roomForHolds(now int64, bound int) bool {
	for k, set := range sh.holds {
		if set.expires <= now {
			sh.release(set.id, set, now, "")
			delete(sh.holds, k)
		}
	}
	return len(sh.holds) < bound
}

// sweepHolds gives back the holds of a sample of the shard's records that expired, and drops
// the records left empty: the holds of an identity that never comes back. The caller holds
// sh.mu.
func (sh *memoryShard) sweepHolds(now int64) {
	const sample = 8
	seen := 0
	for k, set := range sh.holds {
		if set.expires <= now {
			sh.release(set.id, set, now, "")
			delete(sh.holds, k)
		}
		if seen++; seen >= sample {
			break
		}
	}
}
