package ratelimit

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// leasingStore is the layer of the Redis store that serves hot identities from leases of
// quota (Policy.Lease). A list whose policies lease is checked here first: an identity this
// instance has seen at least twice within a lease's time takes a lease of k units, one atomic
// check of cost k that charges them in the store, and its next requests are admitted from it
// without a call. The lease ends when it is spent, after its Lease, or with the window it was
// charged in, whichever comes first; what was not used is then refunded. A reset of the
// identity, made here or heard from elsewhere, ends it, and Redis keeps the lease's units
// counted through a reset until the lease ends (see leasecount.go). A denial of the
// identity is answered here until its Retry-After, which a fixed window makes exact. Every
// other list, and every call but a charging check, goes straight to the store below. Being
// the outermost layer, it also refuses every call once the store is closed (redisclose.go).
type leasingStore struct {
	next  Store
	clock Clock
	log   logs
	// A failed refund is logged at most once a second: the second of the last line, and the
	// failures not logged since.
	lastLog, notLogged atomic.Int64

	// heard reports whether a denial may be answered here until its Retry-After: while the
	// store hears the fleet's refunds and resets (see forgets.go). Nil: never.
	heard func() bool

	// counts is the store below that counts the units leases hold, so that a reset leaves
	// them counted (see leasecount.go); nil: a store that does not.
	counts leaseCounter
	// broke is set while the subscription is broken (see subscribed). s.mu guards it.
	broke bool

	// stored names an identity as the store's keys hold it, which is how announcements name
	// it (see storedIdentity).
	stored func(identity string) string

	mu      sync.Mutex
	entries map[leaseKey]*leaseEntry
	byKey   map[string][]*leaseEntry // the entries of each identity (see forgetKey)
	tracked atomic.Int32             // len(entries), read without mu
	// full is set while the layer tracks as many identities as it may, and new ones go to the
	// store without a lease: told to observer (quota_leases) and logged, when it starts and
	// when it ends, a minute after the last identity turned away (one reclaimed entry is no
	// end: under churn it would flap with every sweep), seen by the next leased check, of a
	// new identity or a tracked one. refused is when that was. Both are written under s.mu;
	// full is read without it, so that a check of a tracked identity reads no clock while the
	// layer has room.
	full     atomic.Bool
	refused  time.Time
	observer *Observer     // nil: none
	degraded *degradations // what the store reported running without (see observer.go)

	// The store's closing (see redisclose.go): closed refuses every call from Close on;
	// closeBelow closes the layers below; bg runs the refunds of leases.
	closed     atomic.Bool
	closeOnce  sync.Once
	closeBelow func()
	bg         *background
}

// maxLeaseEntries bounds the identities the layer tracks at once: when it is full of
// identities seen within their lease's time, a new one goes to the store uncached.
const maxLeaseEntries = 4096

// leaseKey names one identity under one policy list.
type leaseKey struct {
	id  string
	set *compiledPolicy
	n   int
}

// leaseEntry is what the layer knows of one identity under one list. Its mutex guards it.
type leaseEntry struct {
	mu       sync.Mutex
	key      string   // the identity
	policies []Policy // its list, as the first call gave it
	stored   string   // the identity as storage keys hold it (see storedIdentity)
	of       []*compiledPolicy
	lease    time.Duration // the list's Lease

	// How much this identity asks of this instance: units asked since tick, and in the tick
	// before it (ticks are one lease long).
	tick             time.Time
	asked, askedLast int64
	// remaining is the least Remaining of the list the store last reported: the next lease
	// takes at most an eighth of it, leaving the rest to the other instances.
	remaining int64

	// The lease: units charged at at (the store's time, which a refund names), used of them
	// handed out; taken (when the store was asked for it) and until are on the layer's clock,
	// this server's, which may be set apart from the store's (Redis TIME).
	gen              uint64
	active           bool
	at, taken, until time.Time
	units, used      int64
	base             []PolicyResult // the results of the charge that took the lease
	timer            *time.Timer    // ends the lease at until

	// taking is closed when the call that takes a lease returns; nil when none is under way.
	taking chan struct{}

	// A denial of cost deniedCost or more, answered here until deniedUntil; both on the
	// layer's clock, deniedAt when the store was asked.
	deniedAt, deniedUntil time.Time
	deniedCost            int64
	denial                []PolicyResult
	// forgets counts the ends of e's denial by a refund or a reset of the identity (made
	// here, or announced) and by a subscription made again: a denial that comes back from a
	// check begun before one of them is not answered (the refund may have made room since the
	// store denied), as the denial cache does with its epochs.
	forgets uint64
	// resets counts the resets of the identity (made here, or announced) and the
	// subscriptions made again, each of which ends e's lease: a lease whose check was under
	// way meanwhile ends as soon as it is taken.
	resets uint64
}

// forgetDenial ends e's denial, and any that a check under way would bring back. The caller
// holds e.mu.
func (e *leaseEntry) forgetDenial() {
	e.deniedUntil = time.Time{}
	e.forgets++
}

var _ Store = (*leasingStore)(nil)

// leasing wraps s in the leasing layer, which reports to deg when it is full (nil: to nobody).
func leasing(s Store, c *storeConfig, bg *background, deg *degradations) *leasingStore {
	counts, _ := capability[leaseCounter](s)
	return &leasingStore{next: s, clock: clockOf(s), log: logs{c.logger}, entries: map[leaseKey]*leaseEntry{}, byKey: map[string][]*leaseEntry{}, stored: c.stored,
		observer: c.res.observer, degraded: deg, bg: bg, counts: counts}
}

// Unwrap declares the store below: every capability is its.
func (s *leasingStore) Unwrap() Store { return s.next }

// PassesHolds declares that reservations pass straight through (see holdsOf): a list with
// Lease takes no holds.
func (s *leasingStore) PassesHolds() bool { return true }

// leaseOf returns the lease time of a list: its policies all set Lease (New sees to it), and
// the shortest is the list's. 0: the list does not lease.
func leaseOf(policies []Policy) time.Duration {
	if len(policies) == 0 || policies[0].Lease <= 0 {
		return 0
	}
	d := policies[0].Lease
	for i := range policies[1:] {
		d = min(d, policies[i+1].Lease)
	}
	return d
}

// countLeased is how many of the policies set Lease.
func countLeased(policies []Policy) int {
	n := 0
	for i := range policies {
		if policies[i].Lease > 0 {
			n++
		}
	}
	return n
}

func (s *leasingStore) Check(ctx context.Context, key string, policies []Policy, cost int64, charge bool, out []PolicyResult) (time.Time, error) {
	if err := s.open(ctx); err != nil {
		return time.Time{}, err
	}
	lease := leaseOf(policies)
	if lease == 0 || !charge || cost <= 0 {
		return s.next.Check(ctx, key, policies, cost, charge, out)
	}
	e := s.entry(key, policies, lease)
	if e == nil {
		return s.next.Check(ctx, key, policies, cost, charge, out)
	}
	e.mu.Lock()
	e.count(s.clock.Now(), cost)
	e.mu.Unlock()
	for {
		now := s.clock.Now()
		e.mu.Lock()
		if e.active && !now.Before(e.until) {
			s.end(e)
		}
		if e.active {
			if e.used+cost <= e.units {
				e.used += cost
				at := e.at
				e.serve(now, out)
				e.mu.Unlock()
				return at, nil
			}
			s.end(e) // spent: what is left is too little for this request
		}
		if now.Before(e.deniedUntil) && cost >= e.deniedCost {
			at := e.deniedAt
			e.answerDenial(now, out)
			e.mu.Unlock()
			return at, nil
		}
		if ch := e.taking; ch != nil { // another request is taking a lease: wait for it
			e.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return time.Time{}, ctx.Err()
			}
		}
		if e.asked+e.askedLast <= cost { // not hot: this request alone in a lease's time
			e.mu.Unlock()
			return s.next.Check(ctx, key, policies, cost, charge, out)
		}
		k := e.size(cost)
		ch := make(chan struct{})
		e.taking = ch
		forgets, resets := e.forgets, e.resets
		e.mu.Unlock()
		at, err := s.take(ctx, e, key, policies, cost, k, lease, forgets, resets, out)
		e.mu.Lock()
		e.taking = nil
		close(ch)
		e.mu.Unlock()
		return at, err
	}
}

// take asks the store for a lease of k units, of which the request takes cost, and fills
// out with the request's results. A lease the store refuses is asked again for the request
// alone; a request the store refuses is answered here until its Retry-After, unless the
// identity's denials were forgotten since e.forgets read forgets; a lease taken while the
// identity was reset (since e.resets read resets) or the store closed ends at once. The
// lease's time and the denial's count from when the store was asked, on this server's clock,
// as the denial cache's do: never past the store's own, whatever sets the two clocks apart.
func (s *leasingStore) take(ctx context.Context, e *leaseEntry, key string, policies []Policy, cost, k int64, lease time.Duration, forgets, resets uint64, out []PolicyResult) (time.Time, error) {
	asked := s.clock.Now()
	var (
		at  time.Time
		err error
	)
	if k > cost && s.counts != nil {
		at, err = s.counts.chargeLease(ctx, key, policies, k, out)
	} else {
		at, err = s.next.Check(ctx, key, policies, k, true, out)
	}
	if err == nil && k > cost && !allAllowed(out) {
		e.mu.Lock()
		e.remaining = leastRemaining(out)
		e.mu.Unlock()
		k = cost
		at, err = s.next.Check(ctx, key, policies, k, true, out)
	}
	if err != nil {
		if k > cost && unanswered(err) {
			s.warn("ratelimit: a lease's check got no answer; if it ran in Redis, the lease's units stay charged until their window ends (fewer admitted, never more)",
				"units", k, "error", err)
		}
		return at, err
	}
	if fellBack(out) { // decided by the local fallback: neither a lease nor a denial of the store's
		if k > cost && allAllowed(out) {
			s.giveBackLocally(ctx, key, policies, k-cost, at, out)
		}
		return at, nil
	}
	var refund func() // of a lease that ends as it is taken, made without e.mu
	defer func() {
		if refund != nil {
			refund()
		}
	}()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.remaining = leastRemaining(out)
	if !allAllowed(out) {
		// Answered here as the denial cache would be: only until an exact Retry-After of a
		// policy that allows it (not one with NoDenialCache).
		if wait, ok := exactWait(policies, out); ok && wait > 0 && s.heard != nil && s.heard() && e.forgets == forgets {
			e.deniedAt, e.deniedCost = asked, cost
			e.deniedUntil = asked.Add(wait)
			e.denial = append(e.denial[:0], out...)
		}
		return at, nil
	}
	if k == cost {
		return at, nil // a request of its own: nothing is left to lease
	}
	end := lease
	for i := range out {
		end = min(end, out[i].ResetAfter) // a fixed window's end: the lease ends with it
	}
	e.gen++
	e.active, e.at, e.taken, e.until, e.units, e.used = true, at, asked, asked.Add(end), k, cost
	e.base = append(e.base[:0], out...)
	e.serve(asked, out)
	for i := range out {
		out[i].source = observe.SourceStore // the store decided this one
	}
	if s.closed.Load() || e.resets != resets { // Close ended the leases meanwhile, or a reset: this one ends here
		refund = s.stop(e)
		return at, nil
	}
	gen := e.gen
	e.timer = time.AfterFunc(end, func() { // the lease ends even if no request comes to end it
		e.mu.Lock()
		if e.gen == gen && e.active {
			s.end(e)
		}
		e.mu.Unlock()
	})
	return at, nil
}

// fellBack reports whether the results are the local fallback's (the store was unavailable).
func fellBack(out []PolicyResult) bool {
	return len(out) > 0 && out[0].source == observe.SourceFallback
}

// giveBackLocally gives back to the local fallback the units of a lease it charged beyond the
// request's, and fills out with what it then reports, as admitted by the fallback.
func (s *leasingStore) giveBackLocally(ctx context.Context, key string, policies []Policy, units int64, at time.Time, out []PolicyResult) {
	f, ok := capability[localDecider](s.next)
	if !ok {
		return
	}
	store, scaled := f.local(policies)
	if store == nil {
		return
	}
	if len(out) > 0 && out[0].overflow { // charged on the overflow quota of a full memory store:
		if o, ok := capability[overflowStore](store); ok { // given back, and read, there
			store = o.overflowQuota()
		}
	}
	if store.Refund(ctx, key, scaled, units, at) != nil {
		return // a memory store: it does not fail
	}
	if _, err := store.Check(ctx, key, scaled, 0, false, out); err != nil {
		return
	}
	for i := range out {
		out[i].source = observe.SourceFallback
	}
}

// end ends e's lease and refunds what it did not use, in the background. The caller holds
// e.mu.
func (s *leasingStore) end(e *leaseEntry) {
	if refund := s.stop(e); refund != nil && !s.bg.run(refund) {
		refund() // the store is closing: its refunds are waited for
	}
}

// stop ends e's lease and returns the refund of what it did not use (nil: nothing), to be
// called without e.mu. The caller holds e.mu.
func (s *leasingStore) stop(e *leaseEntry) func() {
	if !e.active {
		return nil
	}
	e.active = false
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	units, unused, at, key, policies := e.units, e.units-e.used, e.at, e.key, e.policies
	if unused <= 0 && s.counts == nil {
		return nil
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), leaseRefundTimeout)
		defer cancel()
		var err error
		if s.counts != nil { // the end of a lease Redis counts, spent or not
			err = s.counts.endLease(ctx, key, policies, max(unused, 0), units, at)
		} else {
			err = s.next.Refund(ctx, key, policies, unused, at)
		}
		if err != nil {
			// The units stay charged until their window ends: fewer admitted, never more.
			s.warn("ratelimit: a lease's unused units could not be given back; they stay charged until their window ends",
				"units", unused, "error", err)
		}
	}
}

// warn logs a warning of units a lease leaves charged, at most one a second, saying how many
// it did not log since the last.
func (s *leasingStore) warn(msg string, args ...any) {
	now, last := time.Now().Unix(), s.lastLog.Load()
	if now == last || !s.lastLog.CompareAndSwap(last, now) {
		s.notLogged.Add(1)
		return
	}
	s.log.get().Warn(msg, append(args, "not_logged_since", s.notLogged.Swap(0))...)
}

// unanswered reports whether err leaves unknown whether a call ran in Redis: it timed out or
// was canceled after it was sent, or its connection broke on the way.
func unanswered(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false // never sent
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	k := kindOf(err)
	return k == kindTimeout || k == kindUnavailable
}

// leaseRefundTimeout bounds the refund of a lease's unused units.
const leaseRefundTimeout = time.Second

// count adds a request of cost at now to what the identity asked.
func (e *leaseEntry) count(now time.Time, cost int64) {
	switch since := now.Sub(e.tick); {
	case since >= 2*e.lease:
		e.tick, e.asked, e.askedLast = now, 0, 0
	case since >= e.lease:
		e.tick, e.askedLast, e.asked = now, e.asked, 0
	}
	e.asked += cost
}

// size is the units of the next lease: twice what the identity asked in the last tick, at
// least cost, at most an eighth of the quota the store last reported left.
func (e *leaseEntry) size(cost int64) int64 {
	k := 2 * max(e.asked, e.askedLast)
	if e.remaining > 0 {
		k = min(k, e.remaining/8)
	}
	return max(k, cost)
}

// serve fills out with the results of a request admitted from the lease at now: what the
// store reported when the lease was taken, with the lease's unused units added back and the
// time since taken off. The caller holds e.mu.
func (e *leaseEntry) serve(now time.Time, out []PolicyResult) {
	elapsed := now.Sub(e.taken)
	left := e.units - e.used
	for i, b := range e.base {
		r := &out[i]
		r.Allowed, r.Remaining, r.RetryAfter, r.Delay = true, b.Remaining+left, 0, 0
		r.ResetAfter = max(b.ResetAfter-elapsed, time.Microsecond)
		r.EffectiveWindow = max(b.EffectiveWindow-elapsed, time.Microsecond)
		r.source = observe.SourceLease
	}
}

// answerDenial fills out with the denial answered at deniedAt, as it stands at now.
func (e *leaseEntry) answerDenial(now time.Time, out []PolicyResult) {
	elapsed := now.Sub(e.deniedAt)
	for i, d := range e.denial {
		d.ResetAfter = max(d.ResetAfter-elapsed, 0)
		if d.RetryAfter > 0 {
			d.RetryAfter = max(d.RetryAfter-elapsed, time.Microsecond)
		}
		if d.EffectiveWindow > 0 {
			d.EffectiveWindow = max(d.EffectiveWindow-elapsed, time.Microsecond)
		}
		d.source = observe.SourceLease
		out[i] = d
	}
}

// entry returns the entry of key under policies, made if need be, or nil when the layer is
// full of identities in use.
func (s *leasingStore) entry(key string, policies []Policy, lease time.Duration) *leaseEntry {
	k := leaseKey{id: key, set: policies[0].compiled, n: len(policies)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[k]; e != nil && e.isFor(policies) {
		if s.full.Load() { // it may have had room for a minute: see filled
			s.filled(false)
		}
		return e
	}
	if len(s.entries) >= maxLeaseEntries {
		s.sweep()
		if len(s.entries) >= maxLeaseEntries {
			s.filled(true)
			return nil
		}
	}
	s.filled(false)
	e := &leaseEntry{key: key, policies: policies, stored: s.stored(key), of: make([]*compiledPolicy, len(policies)), lease: lease}
	for i := range policies {
		e.of[i] = policies[i].compiled
	}
	s.entries[k] = e
	s.byKey[key] = append(s.byKey[key], e)
	s.tracked.Add(1)
	return e
}

// leasesFullQuiet is how long the layer turns no identity away before it says it has room.
const leasesFullQuiet = time.Minute

// filled records an identity turned away (full) or tracked (not full, a new one or one it
// already tracks), and tells when the layer starts being full, or stops: a minute after it
// last turned one away. The caller holds s.mu.
func (s *leasingStore) filled(full bool) {
	now := s.clock.Now()
	if full {
		s.refused = now
	}
	if s.full.Load() == full || !full && now.Sub(s.refused) < leasesFullQuiet {
		return
	}
	s.full.Store(full)
	if full {
		s.log.get().Warn("ratelimit: the quota leases track as many identities as they may (4,096 seen within their lease's time): new ones go to Redis, a call per request, until some are idle")
	} else {
		s.log.get().Info("ratelimit: the quota leases have room again for new identities (none turned away for a minute)")
	}
	s.degraded.set(degradedQuotaLeases, full)
}

// isFor reports whether e is the entry of exactly this list.
func (e *leaseEntry) isFor(policies []Policy) bool { return samePolicies(e.of, policies) }

// sweep forgets the entries with no lease, no denial and nothing asked for two of their
// lease's time. The caller holds s.mu.
func (s *leasingStore) sweep() {
	now := s.clock.Now()
	for k, e := range s.entries {
		e.mu.Lock()
		idle := !e.active && e.taking == nil && !now.Before(e.deniedUntil) && now.Sub(e.tick) >= 2*e.lease
		e.mu.Unlock()
		if idle {
			delete(s.entries, k)
			s.untrack(e)
			s.tracked.Add(-1)
		}
	}
}

// untrack removes e from the entries of its identity. The caller holds s.mu.
func (s *leasingStore) untrack(e *leaseEntry) {
	list := s.byKey[e.key]
	for i := range list {
		if list[i] == e {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.byKey, e.key)
	} else {
		s.byKey[e.key] = list
	}
}

// forgetKey ends the denials answered here of the identity key, under every policy list: a
// refund or a reset made here under one list may admit another that shares its policies (the
// store's announcement of it comes a message later).
func (s *leasingStore) forgetKey(key string) {
	if s.tracked.Load() == 0 { // no list leases: refunds and resets pass straight through
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.byKey[key] {
		e.mu.Lock()
		e.forgetDenial()
		e.mu.Unlock()
	}
}

// Refund implements [Store]: a refund of a decision served from the lease that is still
// active goes back into it; any other goes to the store, and ends the identity's denials here
// at once, under every list (see forgetKey).
func (s *leasingStore) Refund(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) error {
	if err := s.open(ctx); err != nil {
		return err
	}
	if leaseOf(policies) > 0 {
		if e := s.lookup(key, policies); e != nil {
			e.mu.Lock()
			if e.active && e.at.Equal(at) {
				e.used = max(e.used-cost, 0) // back into the lease, which refunds it if unused
				e.mu.Unlock()
				return nil
			}
			e.mu.Unlock()
		}
	}
	s.forgetKey(key)
	return s.next.Refund(ctx, key, policies, cost, at)
}

// Reset implements [Store]: the identity's lease here ends, and gives back what it did not
// hand out, before Redis forgets (see leasecount.go: a lease that ended leaves nothing
// counted).
func (s *leasingStore) Reset(ctx context.Context, key string, policies []Policy) error {
	if err := s.open(ctx); err != nil {
		return err
	}
	if e := s.lookup(key, policies); e != nil {
		e.mu.Lock()
		refund := s.stop(e)
		e.resets++
		e.forgetDenial()
		e.mu.Unlock()
		if refund != nil {
			refund()
		}
	}
	s.forgetKey(key) // and under the identity's other lists
	return s.next.Reset(ctx, key, policies)
}

// heardReset implements [resetHearer]: a reset of the identity made anywhere ends its leases
// here, giving back what they did not hand out.
func (s *leasingStore) heardReset(stored string) {
	s.endWhere(func(e *leaseEntry) bool { return e.stored == stored })
}

// endWhere ends the leases of the entries that match (called with e.mu held), in the
// background.
func (s *leasingStore) endWhere(match func(*leaseEntry) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		e.mu.Lock()
		if match(e) {
			e.resets++
			s.end(e)
		}
		e.mu.Unlock()
	}
}

// forget implements [forgetter]: a refund or a reset of the identity, made anywhere, ends the
// denials answered here.
func (s *leasingStore) forget(stored string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		if e.stored == stored {
			e.mu.Lock()
			e.forgetDenial()
			e.mu.Unlock()
		}
	}
}

// subscribed implements [forgetter]: when announcements are heard again, every denial answered
// here ends, and after a break every lease too (a reset may have been missed; Redis kept the
// lease's units counted all the same); heard stops new denials meanwhile. The first
// subscription ends no lease: none missed a reset yet.
func (s *leasingStore) subscribed(on bool) {
	s.mu.Lock()
	broke := s.broke
	s.broke = !on
	s.mu.Unlock()
	if !on {
		return
	}
	s.endWhere(func(e *leaseEntry) bool {
		e.forgetDenial()
		return broke
	})
}

// lookup returns the entry of key under policies, or nil.
func (s *leasingStore) lookup(key string, policies []Policy) *leaseEntry {
	if len(policies) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[leaseKey{id: key, set: policies[0].compiled, n: len(policies)}]; e != nil && e.isFor(policies) {
		return e
	}
	return nil
}

// allAllowed reports whether every enforced policy allowed the request.
func allAllowed(out []PolicyResult) bool {
	for i := range out {
		if !out[i].Allowed {
			return false
		}
	}
	return true
}

// leastRemaining is the least Remaining of the results.
func leastRemaining(out []PolicyResult) int64 {
	r := out[0].Remaining
	for i := range out[1:] {
		r = min(r, out[i+1].Remaining)
	}
	return r
}
