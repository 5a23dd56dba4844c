package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// Limiter checks requests against a list of policies, all at once: a request is admitted only
// when every policy admits it, and then it is charged to all of them; a denied request costs
// nothing. Over the Redis store the check is one atomic round trip, shared by every instance.
//
// A Limiter is safe for concurrent use.
type Limiter struct {
	store    Store
	policies []Policy
	observer *Observer      // the store's; nil: none
	timed    bool           // time the decisions: the observer has a Decided hook
	describe describedStore // the store that describes itself, for the observer; nil: none
	slots    bool           // a policy is an in-flight limit: an admitted request holds slots
	header   string         // the RateLimit-Policy header of the policies
	// capacity is the largest cost every enforced policy can admit, and shadowCapacity the
	// largest every shadow policy can (MaxInt64 without one): computed once, so that a check
	// compares its cost with two numbers instead of asking every policy.
	capacity, shadowCapacity int64
	// periods resolves the calendar policies to the periods of each check, on clock, the
	// store's; nil without a calendar policy.
	periods *periods
	clock   Clock
}

// New returns a limiter that checks every policy against store, such as [NewMemoryStore]() or
// [NewRedisStore](client):
//
//	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(),
//		ratelimit.Policy{Limit: 10, Window: time.Second},
//		ratelimit.Policy{Limit: 1000, Window: time.Hour})
//
// It fails when a policy is invalid (the error names the field to fix), when two policies
// share a name, or when there is no policy or no store.
func New(store Store, policies ...Policy) (*Limiter, error) {
	if store == nil {
		return nil, errors.New("ratelimit: New needs a store, e.g. ratelimit.NewMemoryStore()")
	}
	if len(policies) == 0 {
		return nil, errors.New("ratelimit: New needs at least one policy, e.g. ratelimit.Policy{Limit: 100, Window: time.Minute}")
	}
	l := &Limiter{store: store, policies: make([]Policy, len(policies)), observer: observerOf(store),
		capacity: math.MaxInt64, shadowCapacity: math.MaxInt64}
	l.timed = l.observer.wantsDecided()
	l.describe, _ = capability[describedStore](store)
	names := make(map[string]bool, len(policies))
	enforced := false
	for i, p := range policies {
		c, err := p.compile()
		if err != nil {
			return nil, err
		}
		enforced = enforced || !c.Shadow
		if names[c.Name] {
			return nil, fmt.Errorf("%w %q: two policies have this name; give them Names apart", errInvalidPolicy, c.Name)
		}
		names[c.Name] = true
		l.policies[i] = c
		l.slots = l.slots || c.holds()
		if c.Shadow {
			l.shadowCapacity = min(l.shadowCapacity, c.capacity())
		} else {
			l.capacity = min(l.capacity, c.capacity())
		}
	}
	if _, ok := capability[renewer](store); l.slots && !ok {
		return nil, fmt.Errorf("%w: an in-flight policy needs a store that holds slots (declares Renew), such as NewMemoryStore or NewRedisStore", errInvalidPolicy)
	}
	if leased := countLeased(l.policies); leased > 0 && leased < len(l.policies) {
		return nil, fmt.Errorf("%w: %d of the %d policies set Lease; a list leases quota only when every policy of it does", errInvalidPolicy, leased, len(l.policies))
	}
	if !enforced {
		return nil, fmt.Errorf("%w: every policy has Shadow set; a limiter needs one it enforces", errInvalidPolicy)
	}
	if l.periods = newPeriods(l.policies); l.periods != nil {
		l.clock = clockOf(store)
		for i := range l.policies {
			if err := futureAnchor(&l.policies[i], l.clock.Now()); err != nil {
				return nil, err
			}
		}
	}

	l.header = policyHeader(l.policies)
	return l, nil
}

// policiesAt returns the limiter's policies at time t: its calendar policies in the periods
// that hold t.
func (l *Limiter) policiesAt(t time.Time) []Policy {
	if l.periods == nil {
		return l.policies
	}
	return l.periods.at(t)
}

// policiesOf returns the policies decision d was made under: a calendar policy in the period
// of its check.
func (l *Limiter) policiesOf(d *Decision) []Policy {
	if l.periods == nil {
		return l.policies
	}
	results := d.policyResults()
	out := make([]Policy, len(results))
	for i := range results {
		out[i] = results[i].Policy
	}
	return out
}

// with returns a limiter over the same store with other policies.
func (l *Limiter) with(policies []Policy) (*Limiter, error) {
	return New(l.store, policies...)
}

// Allow checks one request from key; it is shorthand for AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	return l.check(ctx, key, 1, true)
}

// AllowN checks a request of the given cost from key and charges it when every policy admits
// it. A cost of 0 charges nothing and reports the current state. A cost above a policy's
// capacity is denied with RetryAfter [algorithms.Never].
//
// Errors wrap [ErrBadRequest] (an empty key, a negative cost) or [ErrStore] with the store's
// own error; observe.ErrorKind names the store failure's kind.
func (l *Limiter) AllowN(ctx context.Context, key string, cost int64) (Decision, error) {
	return l.check(ctx, key, cost, true)
}

// Peek reports what Allow would decide for key, without charging anything.
func (l *Limiter) Peek(ctx context.Context, key string) (Decision, error) {
	return l.check(ctx, key, 1, false)
}

// refund gives back cost units of the charge that decision d made for key (see Settle), as
// far as it still weighs on each policy, and with slots, its in-flight slots in the same call
// (they were taken at its time: never renewed). A decision that charged nothing refunds
// nothing.
func (l *Limiter) refund(ctx context.Context, key string, d Decision, cost int64, slots bool) error {
	if d.Cost == 0 || cost <= 0 {
		return nil // nothing charged
	}
	// A decision of the local fallback was charged there, and is refunded there; one served
	// from a lease of quota goes to the store, whose leasing layer gives it back to the lease
	// or to Redis.
	store, policies := l.store, charged(l.policiesOf(&d), &d)
	if d.Source == observe.SourceFallback {
		f, ok := capability[localDecider](l.store)
		if !ok {
			return nil
		}
		if store, policies = f.local(policies); store == nil {
			return nil
		}
	}
	if d.holds() && !slots { // the slots are given back by release
		policies = without(policies, (*Policy).holds)
		if len(policies) == 0 {
			return nil
		}
	}
	return storeError(opRefund, onOverflow(store, &d).Refund(ctx, key, policies, cost, d.at))
}

// release gives back the in-flight slots that decision d holds for key (see
// [algorithms.InFlight]: an admission by a limiter with an in-flight policy holds them),
// leaving what d charged to the rate policies. A decision that holds no slot releases nothing.
func (l *Limiter) release(ctx context.Context, key string, d Decision) error {
	if !d.holds() {
		return nil
	}
	store, policies := l.slotStore(&d)
	if store == nil {
		return nil
	}
	return storeError(opRelease, onOverflow(store, &d).Refund(ctx, key, policies, d.Cost, d.held))
}

// renew moves the in-flight slots that d holds for key to now, so that their lifetimes start
// again, and records the new time in d.
func (l *Limiter) renew(ctx context.Context, key string, d *Decision) error {
	store, policies := l.slotStore(d)
	if store == nil {
		return nil
	}
	r, ok := capability[renewer](onOverflow(store, d))
	if !ok {
		return storeError(opRenew, errNoSlots)
	}
	at, err := r.Renew(ctx, key, policies, d.Cost, d.held)
	if err != nil {
		return storeError(opRenew, err)
	}
	d.held = at
	return nil
}

// slotStore returns where the slots of d are held, and under which policies: the store, or
// the local fallback that decided in its place; nil when nothing holds them.
func (l *Limiter) slotStore(d *Decision) (Store, []Policy) {
	policies := without(charged(l.policies, d), func(p *Policy) bool { return !p.holds() })
	if d.Source == observe.SourceStore {
		return l.store, policies
	}
	if f, ok := capability[localDecider](l.store); ok {
		return f.local(policies)
	}
	return nil, nil
}

// onOverflow returns the store that holds what d charged in s: s, or the overflow quota of a
// memory store at its bound that decided d there.
func onOverflow(s Store, d *Decision) Store {
	if !d.overflowed() {
		return s
	}
	if o, ok := capability[overflowStore](s); ok {
		return o.overflowQuota()
	}
	return s
}

// without returns the policies for which drop is false.
func without(policies []Policy, drop func(*Policy) bool) []Policy {
	out := make([]Policy, 0, len(policies))
	for i := range policies {
		if !drop(&policies[i]) {
			out = append(out, policies[i])
		}
	}
	return out
}

// Reset forgets everything the limiter's policies hold for key. On a Redis store, the units
// that quota leases of key hold (Policy.Lease) stay counted until each lease ends, wherever
// it runs: what a lease hands out after the reset is in the new count (docs/redis.md: Hot
// identities).
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if key == "" {
		return errEmptyKey
	}
	return storeError("store, resetting", l.store.Reset(ctx, key, l.policiesAt(l.now())))
}

var errEmptyKey = &opError{opKey, ErrBadRequest, errors.New("the key is empty")}

// now is the time on the limiter's clock, which picks the periods of its calendar policies.
func (l *Limiter) now() time.Time {
	if l.clock == nil {
		return time.Time{} // no calendar policy: no period to pick
	}
	return l.clock.Now()
}

// results holds the per-policy results of checks under way: the store writes them through an
// interface call, so a buffer on the stack would escape to the heap on every check.
var results = sync.Pool{New: func() any { return new([8]PolicyResult) }}

// check is Allow, AllowN and Peek. It hands the decision up by pointer: a Decision is several
// hundred bytes, and returned by value through each layer it would be copied at every one.
func (l *Limiter) check(ctx context.Context, key string, cost int64, charge bool) (d Decision, err error) {
	err = l.checkInto(ctx, &d, key, cost, charge)
	return d, err
}

// checkInto is check, writing to d, which must be the zero Decision: a guard decides into its
// outcome's, with no Decision on its stack (see reserveInto).
func (l *Limiter) checkInto(ctx context.Context, d *Decision, key string, cost int64, charge bool) error {
	var start time.Time
	if l.timed {
		start = time.Now()
	}
	return l.decide(ctx, d, key, cost, charge, start)
}

// observe reports a decision to the observer's Decided hook, if there is one. raw are its
// results, from a buffer of the heap: the report allocates nothing.
func (l *Limiter) observe(start time.Time, d *Decision, policies []Policy, raw []PolicyResult) {
	if !l.timed {
		return
	}
	for i := range raw {
		raw[i].Policy = policies[i]
	}
	e := DecisionEvent{Allowed: d.Allowed, Source: d.Source, Results: raw}
	if l.describe != nil {
		e.Store = l.describe.info() // it may change: a store whose server refused Functions calls scripts
	}
	e.Latency = time.Since(start)
	l.observer.decided(e)
}

// decide is check, writing to d, which must be the zero Decision, with the time it began when
// there is an observer. On an error d is left zero.
func (l *Limiter) decide(ctx context.Context, d *Decision, key string, cost int64, charge bool, start time.Time) error {
	if key == "" {
		return errEmptyKey
	}
	if cost < 0 {
		return &opError{opCost, ErrBadRequest, fmt.Errorf("cost %d is negative", cost)}
	}
	policies := l.policiesAt(l.now())
	n := len(policies)
	var raw []PolicyResult
	if n <= 8 {
		buf := results.Get().(*[8]PolicyResult)
		defer results.Put(buf)
		raw = buf[:n]
		for i := range raw {
			// A pooled buffer: only the layers in front of a store set the source, and only a
			// memory store at its bound sets overflow.
			raw[i].source, raw[i].overflow = observe.SourceStore, false
		}
	} else {
		raw = make([]PolicyResult, n)
	}
	// A cost above a policy's capacity can never be admitted. Such a request is not run
	// through the algorithms (a huge cost would overflow their arithmetic): the store only
	// reports the current state, and those policies deny it for ever.
	tooCostly := cost > l.capacity
	if cost > l.shadowCapacity && !tooCostly {
		return l.decideWithout(ctx, d, key, cost, charge, policies, raw, start)
	}
	if tooCostly {
		at, err := l.store.Check(ctx, key, policies, 0, false, raw)
		if err != nil {
			return storeError(opCheck, err)
		}
		for i := range policies {
			if cost > policies[i].capacity() {
				raw[i].neverAllowed()
			}
		}
		if err := l.shadowsOf(ctx, key, cost, policies, raw); err != nil {
			return storeError(opCheck, err)
		}
		d.decide(policies, raw, at)
		l.observe(start, d, policies, raw)
		return nil
	}
	at, err := l.store.Check(ctx, key, policies, cost, charge, raw)
	if err != nil {
		return storeError(opCheck, err)
	}
	d.decide(policies, raw, at)
	l.record(d, cost, charge)
	l.observe(start, d, policies, raw)
	return nil
}

// record records in d what it charged: cost, when it was admitted and charged, and the time of
// its slots, when it holds some.
func (l *Limiter) record(d *Decision, cost int64, charge bool) {
	if !charge || !d.Allowed || cost == 0 {
		return
	}
	d.Cost = cost
	if l.slots {
		d.held = d.at
	}
}

// shadowsOf evaluates, at cost and charging nothing (the request is denied), the shadow
// policies that can hold cost of a request too costly for an enforced policy: each reports
// what it would have done with it, as beside a request the enforced policies decide. Without
// such a policy it makes no call.
func (l *Limiter) shadowsOf(ctx context.Context, key string, cost int64, policies []Policy, raw []PolicyResult) error {
	fits := func(p *Policy) bool { return p.Shadow && cost <= p.capacity() }
	var run []Policy
	for i := range policies {
		if fits(&policies[i]) {
			run = append(run, policies[i])
		}
	}
	if len(run) == 0 {
		return nil
	}
	out := make([]PolicyResult, len(run))
	if _, err := l.store.Check(ctx, key, run, cost, false, out); err != nil {
		return err
	}
	j := 0
	for i := range policies {
		if fits(&policies[i]) {
			raw[i] = out[j]
			j++
		}
	}
	return nil
}

// decideWithout decides a request too costly for some shadow policies, but not for an enforced
// one: the store checks it against the others, and those shadow policies deny it for ever.
func (l *Limiter) decideWithout(ctx context.Context, d *Decision, key string, cost int64, charge bool, policies []Policy, raw []PolicyResult, start time.Time) error {
	run := make([]Policy, 0, len(policies))
	for _, p := range policies {
		if !p.Shadow || cost <= p.capacity() {
			run = append(run, p)
		}
	}
	out := make([]PolicyResult, len(run))
	at, err := l.store.Check(ctx, key, run, cost, charge, out)
	if err != nil {
		return storeError(opCheck, err)
	}
	j := 0
	for i, p := range policies {
		if !p.Shadow || cost <= p.capacity() {
			raw[i] = out[j]
			j++
		} else {
			// Made up, but of the same decision: where it was made (a memory store's overflow
			// quota, which a refund then goes to: see onOverflow), as who made it.
			raw[i] = PolicyResult{source: out[0].source, overflow: out[0].overflow}
			raw[i].neverAllowed()
		}
	}
	d.decide(policies, raw, at)
	l.record(d, cost, charge)
	l.observe(start, d, policies, raw)
	return nil
}

// charged returns the policies a decision charged: every enforced one, and the shadow policies
// that admitted the request (a shadow policy's state counts what it would have admitted).
func charged(policies []Policy, d *Decision) []Policy {
	results := d.policyResults()
	for i := range policies {
		if policies[i].Shadow && !results[i].Allowed {
			out := make([]Policy, 0, len(policies))
			for j := range policies {
				if !policies[j].Shadow || results[j].Allowed {
					out = append(out, policies[j])
				}
			}
			return out
		}
	}
	return policies
}

// renewable reports policies that hold no slots, or were not validated by New.
func renewable(policies []Policy) error {
	if err := compiledAll(policies); err != nil {
		return err
	}
	for i := range policies {
		if !policies[i].holds() {
			return fmt.Errorf("ratelimit: policy %q holds no in-flight slot to renew", policies[i].Name)
		}
	}
	return nil
}

// compiledAll reports policies that did not come from a Limiter, which a store cannot run.
func compiledAll(policies []Policy) error {
	for i := range policies {
		if policies[i].compiled == nil {
			return fmt.Errorf("ratelimit: policy %q was not validated by ratelimit.New; a store checks the policies of a Limiter", policies[i].Name)
		}
		if err := unresolved(&policies[i]); err != nil {
			return err
		}
	}
	return nil
}
