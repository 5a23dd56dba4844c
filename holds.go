package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// A hold is what Limiter.Reserve charged on an estimate, until Settle says what the request
// cost: the store counts it in every admission while it lasts, and gives it back by itself
// once it outlives its lifetime (an instance that died, a request never settled).
type hold struct {
	id   string    // unique in the fleet: this process's random prefix and a counter
	tag  string    // the policy list's, which names the holds' key (see holdsTag)
	cost int64     // the estimate charged
	at   time.Time // when, on the store's clock
	mask uint64    // the policies charged, bit i for policy i (a shadow policy only if it admitted)
	offs []int64   // the offset from at of each policy's refunds, µs (see holdOffsets)
	life int64     // its lifetime, µs
	keep int64     // how long the list's record of holds lives, ms: the longest hold's lifetime and window
	// settled is set by the first Settle: a second is refused, not charged twice.
	settled atomic.Bool
}

// holdStore is a store that keeps holds (Limiter.Reserve): reserve checks and charges as
// Check does and records the hold, settle charges the hold's actual cost in its place; both
// first give back the list's holds that expired. settle reports whether the hold was still
// recorded (false: it had expired and been given back, or was reset): the whole actual is then
// charged.
type holdStore interface {
	reserve(ctx context.Context, key string, policies []Policy, h *hold, out []PolicyResult) (time.Time, error)
	settle(ctx context.Context, key string, policies []Policy, h *hold, actual int64) (held bool, err error)
}

// holdsThrough is the capability of a wrapper store that lets holds pass to the store it
// wraps (see [Store]: PassesHolds): the quota leases (a list with Lease takes no holds), or a
// wrapper of yours that only adds to the store (an observer, a name). Holds do not pass over
// a wrapper that does not say so: its Check, which they skip, may count or cache what it sees.
type holdsThrough interface{ PassesHolds() bool }

// holdsOf returns the store of s that keeps holds: s itself, or the one a wrapper of this
// package passes them to.
func holdsOf(s Store) (holdStore, bool) {
	for s != nil {
		if hs, ok := s.(holdStore); ok {
			return hs, true
		}
		w, ok := s.(wrapperStore)
		if p, passes := s.(holdsThrough); !ok || !passes || !p.PassesHolds() {
			break
		}
		s = w.Unwrap()
	}
	return nil, false
}

// errNoHolds is the error of a reservation over a store that keeps no holds.
var errNoHolds = &opError{opCheck, ErrBadRequest, errors.New("the store keeps no holds: use NewMemoryStore or NewRedisStore (a wrapper of one passes them only when it declares PassesHolds: its Check would be skipped)")}

// overdrawer is the capability of the memory store's overflow quota: a settle above its
// estimate of a decision made there charges the difference there.
type overdrawer interface {
	overdraw(ctx context.Context, key string, policies []Policy, mask uint64, cost int64) error
}

// noRecord is the id of a settle without a hold: a charge made by a plain check, settled at
// more than it charged (the overdraft is charged, nothing is looked up).
const noRecord = "-"

// The bounds of a hold (docs/costs.md).
const (
	// maxHold is the longest a hold lasts: a request that runs longer is charged at its
	// settle, and its hold no longer counts after that.
	maxHold = 5 * time.Minute
	// holdGrace is how long the record of a list's holds outlives its longest hold and window:
	// a hold's charge weighs on its policy no longer than a window.
	holdGrace = time.Minute
)

var (
	holdPrefix = func() string {
		var b [6]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	holdCount atomic.Uint64
)

// newHoldID returns an id no other hold of the fleet has: 48 random bits of this process and a
// counter.
func newHoldID() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], holdCount.Add(1))
	return holdPrefix + strconv.FormatUint(binary.BigEndian.Uint64(b[:]), 36)
}

// holdsTag names a policy list's holds: a digest of its policies' tags, limits and bursts, so
// that two lists of one identity keep their holds apart — two tiers whose policies differ in
// their limits alone share their state, not their holds: an expired hold is given back at the
// rate of the policies that charged it. (cmd/ratelimit's inspect computes the same.)
func holdsTag(policies []Policy) string {
	h := fnv.New64a()
	var b [48]byte
	for i := range policies {
		h.Write([]byte(policies[i].tag()))
		n := append(append(append(append(b[:0], 0), strconv.FormatInt(policies[i].Limit, 10)...), 0), strconv.FormatInt(policies[i].Burst, 10)...)
		h.Write(append(n, 0))
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// holdable reports why policies cannot take holds, or nil: an in-flight limit (its charges
// are holds already, given back when the request ends), a shaping bucket (a charge that
// waits for its slot cannot be settled), a quota lease (its units are handed out locally).
func holdable(policies []Policy) error {
	for i := range policies {
		c := policies[i].compiled
		switch {
		case algo.Holds(c.model):
			return fmt.Errorf("%w %q: an in-flight policy takes no estimate to settle; its slots are given back when the request ends", errInvalidPolicy, policies[i].Name)
		case c.model.Shapes():
			return fmt.Errorf("%w %q: a shaping policy takes no estimate to settle; a request that waits for its slot is charged as it is admitted", errInvalidPolicy, policies[i].Name)
		case policies[i].Lease > 0:
			return fmt.Errorf("%w %q: a policy with Lease takes no estimate to settle; leased units are handed out by this instance", errInvalidPolicy, policies[i].Name)
		}
	}
	return nil
}

// maxHolds bounds the holds of one identity's list that its admissions let stand at once
// (each a record the store keeps): an estimate holds at least a maxHolds-th of what the
// tightest enforced policy admits while a hold lives, so that no more fit (twice as many
// across a window's end, whose holds outlive their window's charges until they expire, and
// for a bucket, which admits its capacity and then its refill meanwhile).
const maxHolds = 1024

// holdBounds returns the least and the largest estimate a hold of policies takes and its
// lifetime. The largest is half the least capacity of an enforced policy (at least 1). The
// lifetime is maxHold, or the shortest enforced window if shorter (a calendar period's: to its
// end). The least is a maxHolds-th, rounded up, of what the tightest enforced policy admits
// over the lifetime: its capacity, or for a bucket whose refill over it is more, that refill.
// Where that least would exceed the largest (a bucket whose small burst refills many times
// over while a hold lives), holds live shorter instead: as long as the refill takes to admit
// maxHolds of the largest. The ratelimit command's inspect mirrors it (cmd/ratelimit's held,
// TestHeldAgreesWithReserve): change both.
func holdBounds(policies []Policy, at time.Time) (minEstimate, maxEstimate int64, life time.Duration) {
	var tightest *Policy // the enforced policy of the least capacity
	life = maxHold
	for i := range policies {
		p := &policies[i]
		if p.Shadow {
			continue
		}
		if tightest == nil || p.capacity() < tightest.capacity() {
			tightest = p
		}
		w := p.Window
		if p.Period != nil {
			w = time.Duration(p.compiled.params.Start+p.compiled.params.Window-at.UnixMicro()) * time.Microsecond
		}
		life = min(life, w)
	}
	life = max(life, time.Millisecond)
	if tightest == nil { // shadow policies alone: nothing is enforced
		return 1, 1, life
	}
	maxEstimate = max(tightest.capacity()/2, 1)
	span := admitsOver(tightest, life) // what the policies admit over life, at most; a bound
	for i := range policies {
		if !policies[i].Shadow {
			span = min(span, admitsOver(&policies[i], life))
		}
	}
	if most := float64(maxEstimate) * maxHolds; span > most {
		// Only a bucket admits more than its capacity, and only the tightest policy's capacity
		// is under most: it is a bucket, whose refill admits most in this long.
		us := most * float64(tightest.compiled.params.Window) / float64(tightest.compiled.params.Limit)
		return maxEstimate, maxEstimate, max(time.Duration(us)*time.Microsecond, time.Millisecond)
	}
	return max(int64(math.Ceil(span/maxHolds)), 1), maxEstimate, life
}

// admitsOver returns how much p admits over d, within a factor of two: its capacity, or for a
// bucket, which refills at its rate meanwhile, that refill if it is more.
func admitsOver(p *Policy, d time.Duration) float64 {
	c := p.compiled
	s := float64(c.params.Capacity())
	if c.model.UsesBurst() {
		s = max(s, float64(c.params.Limit)*float64(d.Microseconds())/float64(c.params.Window))
	}
	return s
}

// keepFor is how long the record of holds of policies lives after a reserve: the longest a
// hold lasts, the longest a charge weighs on a policy's state (weighs), and a grace.
func keepFor(policies []Policy, life time.Duration) int64 {
	longest := life
	for i := range policies {
		longest = max(longest, weighs(&policies[i]))
	}
	return (longest + holdGrace).Milliseconds()
}

// weighs returns the longest a charge admitted under p weighs on its state: how long the
// state that a charge of its whole capacity leaves on a fresh one matters, as the model says
// (a window's; two, for a sliding counter; a bucket's capacity span, which is more than its
// window when its burst is more than its limit). A log's does not depend on the cost: one unit
// is charged.
func weighs(p *Policy) time.Duration {
	c := p.compiled
	params := c.params
	cost := params.Capacity()
	if algo.KeepsLog(c.model) {
		cost = 1
	}
	var (
		s algo.State
		r algo.Result
	)
	c.model.Check(&params, &s, params.Start, cost, &r)
	return time.Duration(c.model.Charge(&params, &s, params.Start, cost)) * time.Microsecond
}

// chargedMask returns the policies a check charged: every enforced one, and each shadow policy
// that admitted the request.
func chargedMask(policies []Policy, out []PolicyResult) uint64 {
	var m uint64
	for i := range policies {
		if !policies[i].Shadow || out[i].Allowed {
			m |= 1 << i
		}
	}
	return m
}

// holdOffsets returns the offsets from a hold's time of the times its refunds are made at, one
// per policy: 0, but for a TAT the start of the hold's charge in it — the TAT after the charge
// (ResetAfter: rounded up) less the charge's length (rounded down) — so that holds made at one
// instant each give back what still weighs of their own part, however many there are (see
// holds.lua, which computes the same from the same results).
func holdOffsets(policies []Policy, out []PolicyResult, cost int64) []int64 {
	offs := make([]int64, len(policies))
	for i := range policies {
		c := policies[i].compiled
		if !c.model.UsesBurst() {
			continue
		}
		offs[i] = out[i].ResetAfter.Microseconds() - cost*c.params.Num/c.params.Den
	}
	return offs
}

// overdraftTimes bounds an overdraft: at most this many times a policy's capacity is charged
// beyond what a settle's decision charged — enough for a TAT to refuse for as many windows (a
// window algorithm forgets it with its window) — and, for a
// TAT, no more than its exact arithmetic holds (maxOverdraft). A usage a broken upstream
// reports as 2^62 refuses the identity; it does not wrap its count to free.
const overdraftTimes = 16

// maxOverdraft returns the most a settle charges beyond its decision's charge on the policies
// of mask: overdraftTimes their least capacity, and for a TAT what keeps its products below
// 2^53 with room for the state it adds to (its span then stays below 2^51µs).
func maxOverdraft(policies []Policy, mask uint64) int64 {
	most := int64(algo.Exact)
	for i := range policies {
		if i < 64 && mask&(1<<i) == 0 {
			continue
		}
		c := policies[i].compiled
		most = min(most, overdraftTimes*c.params.Capacity())
		if c.model.UsesBurst() {
			most = min(most, (algo.Exact-c.params.Den)/(4*c.params.Num)) // a span of 2^51µs at most
		}
	}
	return max(most, 1)
}

// settleOffsets returns the offsets of the refund of a hold settled at actual, less than its
// estimate: for a TAT, at the end of the actual's part of the charge (holds.lua's
// settle_offsets), since what is given back is the charge's tail, which time uses last.
func settleOffsets(policies []Policy, offs []int64, actual int64) []int64 {
	out := make([]int64, len(policies))
	for i := range policies {
		if i < len(offs) {
			out[i] = offs[i]
		}
		if c := policies[i].compiled; c.model.UsesBurst() {
			out[i] += actual * c.params.Num / c.params.Den
		}
	}
	return out
}

// offsetsText is offs as holds.lua writes them: "o1,o2,...".
func offsetsText(offs []int64) string {
	b := make([]byte, 0, 8*len(offs))
	for i, o := range offs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, o, 10)
	}
	return string(b)
}

// maxHoldPolicies is the most policies a list with holds has: the mask of a hold is a Lua
// number, exact to 2^53.
const maxHoldPolicies = 52

// errSettledTwice is the error of a second Settle of one reservation.
var errSettledTwice = &opError{opSettle, ErrBadRequest, errors.New("the reservation was settled already")}

// Reserve admits a request whose cost is known only after it ran — the tokens of a completion,
// the bytes of a response — against an estimate: the request is admitted when every policy can
// hold what is used, what the holds of other admitted requests take, and estimate more, and
// then estimate is charged, held until [Limiter.Settle] says what the request cost. Across
// instances over one Redis, the holds of all are counted in each admission.
//
// An estimate above half the least capacity of the enforced policies holds that half (a
// request cannot take the whole quota before it ran), and below a 1,024th (rounded up, or 1)
// of what the tightest of them admits while a hold lives holds that: no identity can make the
// store keep more than 1,024 holds of its list at once (twice as many across a window's end
// or while a bucket refills). A hold lasts until settled, at most until the shortest window's
// length (a calendar period's end) or 5 minutes (shorter for a bucket whose burst refills
// over a thousand times over meanwhile): a hold that outlives it — its instance died, its
// request was never settled — is given back by the next Reserve or Settle of the identity,
// with every other that expired, and charges nothing. A request still running is charged its
// actual cost when it settles.
//
// Reserve refuses a limiter with an in-flight, a shaping or a leasing policy (ErrBadRequest).
// docs/costs.md gives the worst case: what the limit admits beyond itself is at most what the
// requests in flight when it was reached cost beyond their estimates.
func (l *Limiter) Reserve(ctx context.Context, key string, estimate int64) (Decision, error) {
	if key == "" {
		return Decision{}, errEmptyKey
	}
	if estimate < 0 {
		return Decision{}, &opError{opCost, ErrBadRequest, fmt.Errorf("estimate %d is negative", estimate)}
	}
	if err := l.holdable(); err != nil {
		return Decision{}, err
	}
	hs, ok := holdsOf(l.store)
	if !ok {
		return Decision{}, errNoHolds
	}
	now := l.now()
	if now.IsZero() {
		now = clockOf(l.store).Now()
	}
	policies := l.policiesAt(now)
	least, most, life := holdBounds(policies, now)
	cost := min(max(estimate, least), most)
	h := &hold{id: newHoldID(), tag: holdsTag(policies), cost: cost, life: life.Microseconds(), keep: keepFor(policies, life)}
	var start time.Time
	if l.timed {
		start = time.Now()
	}
	var d Decision
	raw := make([]PolicyResult, len(policies))
	for i := range raw {
		raw[i].source = observe.SourceStore
	}
	at, err := hs.reserve(ctx, key, policies, h, raw)
	if err != nil {
		return Decision{}, storeError(opCheck, err)
	}
	d.decide(policies, raw, at)
	if d.Allowed {
		d.Cost, h.at, h.mask = h.cost, at, chargedMask(policies, raw) // as held: the fallback clamps it again
		if h.offs == nil {                                            // the store decided it under policies (the fallback sets its own)
			h.offs = holdOffsets(policies, raw, cost)
		}
		d.hold = h
		l.observer.held(observe.HoldEvent{Estimate: h.cost})
	}
	l.observe(start, &d, policies, raw)
	return d, nil
}

// holdable reports why the limiter's policies cannot take holds, or nil.
func (l *Limiter) holdable() error {
	if len(l.policies) > maxHoldPolicies {
		return fmt.Errorf("%w: a limiter of %d policies takes no holds; at most %d", errInvalidPolicy, len(l.policies), maxHoldPolicies)
	}
	return holdable(l.policies)
}

// Settle ends the request that decision d admitted for key and charges it actual units in
// place of what d charged: less gives the difference back (as far as it still weighs: what
// time has given back already is not given back twice), more charges the difference beyond
// the limit — an overdraft, which refuses the next requests until time repays it, with a
// Retry-After that says when. Settle(ctx, key, d, 0) gives back everything d charged (a
// request that turned out not to count: see [CountIf]), and Settle(ctx, key, d, d.Cost)
// changes no charge; both end the in-flight slots d holds ([algorithms.InFlight]): call it
// once, when the request ends (the [Guard] does so for the requests it lets through). A
// denied decision settles nothing.
//
// A decision of [Limiter.Reserve] is settled once: a second Settle is refused (ErrBadRequest)
// and charges nothing. A Settle whose context had ended asks nothing of the store and may be
// made again; settle on context.WithoutCancel(ctx) when the work's own context may have ended
// with it (a store call that fails on the way cannot be told from one that was made, and is
// not made again: the hold then gives itself back when its lifetime ends). A hold that expired before its Settle was given back: its whole actual
// is charged then. A negative actual is refused and changes nothing. Over a window or a
// calendar period that has ended, nothing is given back (time did), and what the request cost
// beyond its estimate is charged to the current window — or stays in the period, which has a
// key of its own.
func (l *Limiter) Settle(ctx context.Context, key string, d Decision, actual int64) error {
	if key == "" {
		return errEmptyKey
	}
	if actual < 0 {
		return &opError{opCost, ErrBadRequest, fmt.Errorf("actual cost %d is negative", actual)}
	}
	if !d.Allowed {
		return nil
	}
	if policies := l.policiesOf(&d); actual > d.Cost {
		actual = d.Cost + min(actual-d.Cost, maxOverdraft(policies, chargedMask(policies, d.policyResults())))
	}
	if d.hold != nil {
		if err := ctx.Err(); err != nil { // the store was not asked: the settle may be tried again
			return &opError{opSettle, nil, err}
		}
		if !d.hold.settled.CompareAndSwap(false, true) {
			return errSettledTwice
		}
		held, err := l.settleHold(ctx, key, &d, d.hold, actual)
		if err == nil {
			l.observer.held(observe.HoldEvent{Settled: true, Estimate: d.hold.cost, Actual: actual, Expired: !held})
		}
		return err
	}
	if d.holds() {
		if actual == 0 && d.held.Equal(d.at) { // slots never renewed: one refund gives back all
			return l.refund(ctx, key, d, d.Cost, true)
		}
		if err := l.release(ctx, key, d); err != nil {
			return err
		}
	}
	switch {
	case actual < d.Cost:
		return l.refund(ctx, key, d, d.Cost-actual, false)
	case actual > d.Cost:
		if err := l.holdable(); err != nil {
			return err
		}
		policies := l.policiesOf(&d)
		h := &hold{id: noRecord, tag: holdsTag(policies), cost: d.Cost, at: d.at, mask: chargedMask(policies, d.policyResults()), offs: make([]int64, len(policies)), keep: 1}
		_, err := l.settleHold(ctx, key, &d, h, actual)
		return err
	}
	return nil
}

// settleHold settles h, a hold of d (or a charge d made without one: noRecord) at actual, on
// the store that decided d, and reports whether the store still held it (see holdStore).
func (l *Limiter) settleHold(ctx context.Context, key string, d *Decision, h *hold, actual int64) (bool, error) {
	if d.overflowed() {
		// Decided on a memory store's overflow quota, which keeps no holds: what the estimate
		// charged beyond the actual goes back there, and an overdraft is charged there (a
		// client that filled the store gets no free usage on it).
		switch {
		case actual < h.cost:
			return true, l.refund(ctx, key, *d, h.cost-actual, false)
		case actual > h.cost:
			if o, ok := onOverflow(l.store, d).(overdrawer); ok {
				return true, o.overdraw(ctx, key, l.policiesOf(d), h.mask, actual-h.cost)
			}
		}
		return true, nil
	}
	store, policies := l.store, l.policiesOf(d)
	if d.Source == observe.SourceFallback {
		f, ok := capability[localDecider](l.store)
		if !ok {
			return true, nil
		}
		if store, policies = f.local(policies); store == nil {
			return true, nil
		}
	}
	hs, ok := holdsOf(store)
	if !ok {
		return false, &opError{opSettle, ErrBadRequest, errors.New("the store keeps no holds")}
	}
	held, err := hs.settle(ctx, key, policies, h, actual)
	return held, storeError(opSettle, err)
}
