package ratelimit

import (
	"slices"
	"sync"
	"time"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// Observer is told what the limiter decides and what goes wrong, to count it: a set of
// optional hooks, one func field per event, in the model of net/http/httptrace.ClientTrace.
// A nil field is not called, so an observer sets only the events it counts, and a new event
// is a new field, which breaks no observer written before it. Give it to a store with
// [WithObserver]; every limiter and guard over that store reports to it. The modules
// ratelimit/prometheus and ratelimit/otel each build one (their Observer's Hooks method).
//
// Why a struct and not an interface: an interface of one method per event broke every
// implementation outside this module (a user's metrics, a test double) each time an event was
// added, and one small interface with an event type switch would hide which events exist and
// box each event (an allocation on the request path). A struct of funcs costs a nil check
// per event, allocates nothing, and documents each event where it is set.
//
// The hooks are called on the request path, from many goroutines at once: they must be safe
// for concurrent use, fast, and must not block. The store keeps the pointer it is given:
// do not change the fields once it is given to a store. Two stores given the same pointer
// have one observer (a request checked by guards over both is counted once).
type Observer struct {
	// Decided reports one decision of the limiter: by whom, how long it took, and every
	// policy's result, shadow policies included. A request checked by a guard is one decision
	// (more when it waits for an in-flight slot); a [Limiter] used directly reports its own.
	// The decision is timed only when Decided is set.
	Decided func(e DecisionEvent)
	// Answered reports one request a [Guard] checked, once, with the result its client saw:
	// the figures to compare with the responses by status.
	Answered func(e observe.RequestEvent)
	// StoreFailed reports a failed store call ([ErrStore]); observe.ErrorKind names its kind
	// (breaker_open for a call the circuit breaker did not make).
	StoreFailed func(err error)
	// BreakerChanged reports the store's circuit breaker changing state, from one to another;
	// a Redis store's Close reports a breaker that is not closed as closed, and nothing after.
	BreakerChanged func(from, to observe.BreakerState)
	// MemoryStoreFull reports the memory store at its bound ([WithMaxKeys]) making room for a
	// new identity: by forgetting the least-used state, under half its capacity, of another
	// (overflow false), or, when every identity it holds has used more, by deciding the new
	// one on the shared overflow quota (overflow true). See [NewMemoryStore].
	MemoryStoreFull func(overflow bool)
	// KeyFellBack reports a request the guard limited by a fallback rather than as configured;
	// reason is one of observe.KeyFallbackReasons: by its client IP, its key function having
	// found no key; by the address of the trusted proxy it came from, which named no client
	// (no_proxy_header); by the limiter's own policies, the Resolver having failed
	// (resolver_failed). A guard also logs each reason once (a Resolver's failures through its
	// error handler, at most once a second by default).
	KeyFellBack func(reason string)
	// RedisEvictionPolicy reports the maxmemory-policy of the Redis servers a store writes to
	// (several, comma-separated, when they differ), read when the store is made and again
	// every few minutes, when it changes; "" when it could not be read. evicts reports whether
	// Redis may evict the limiter's keys (any policy but noeviction), handing their identities
	// fresh quotas.
	RedisEvictionPolicy func(policy string, evicts bool)
	// DenialCacheDeaf reports a Redis store's denial cache ([WithDenialCache]) starting (true)
	// or ceasing (false) to be deaf to the refunds and resets the fleet announces. It is deaf
	// from when its store starts listening until the subscription is confirmed, and from each
	// break of the subscription until it is back; it ceases to be when its client is closed.
	// While deaf, the cache takes no new denial, so each request of a denied identity is a
	// Redis call again (nothing is admitted that should not be). Called from a goroutine of
	// the store's, on each change.
	DenialCacheDeaf func(deaf bool)
	// StoreDegraded reports a store starting (degraded true) or ceasing (false) to run without
	// a feature it was made with, falling back to a way that decides the same and costs Redis
	// more; feature is one of observe.Degradations. Each is also a warning in the store's log.
	// A store reports a feature when it finds it unavailable (on a request's goroutine, or on
	// one of its own), and, for quota_leases, again when it is back; the others do not come
	// back while the store lives. A Redis store's Close reports every feature it reported back
	// (degraded false), once, and nothing after.
	StoreDegraded func(feature string, degraded bool)
	// SlotHeld reports a request starting to hold in-flight slots (held 0, acquired true)
	// when its guard admits it, and giving them back (acquired false) after its handler,
	// having held them for held: the figures of the slots held now and of how long each was.
	SlotHeld func(acquired bool, held time.Duration)
	// Queued reports a request starting (entered true) or ending a wait: for an in-flight
	// slot ([WaitForSlot]) or for its slot under a shaping policy. Its time in the queue is
	// observe.RequestEvent.Waited.
	Queued func(entered bool)
	// Held reports a hold of a request whose cost is known only after it ran
	// ([Limiter.Reserve], [ChargeAfter]): taken when the request is admitted, and settled
	// with what it cost (see observe.HoldEvent).
	Held func(e observe.HoldEvent)
}

// The calls of the hooks: each is safe on a nil *Observer and skips a nil hook, and is small
// enough to be inlined, so that an event costs a nil check and allocates nothing.

func (o *Observer) decided(e DecisionEvent) {
	if o != nil && o.Decided != nil {
		o.Decided(e)
	}
}

func (o *Observer) answered(e observe.RequestEvent) {
	if o != nil && o.Answered != nil {
		o.Answered(e)
	}
}

func (o *Observer) storeFailed(err error) {
	if o != nil && o.StoreFailed != nil {
		o.StoreFailed(err)
	}
}

func (o *Observer) memoryStoreFull(overflow bool) {
	if o != nil && o.MemoryStoreFull != nil {
		o.MemoryStoreFull(overflow)
	}
}

func (o *Observer) keyFellBack(reason string) {
	if o != nil && o.KeyFellBack != nil {
		o.KeyFellBack(reason)
	}
}

func (o *Observer) redisEvictionPolicy(policy string, evicts bool) {
	if o != nil && o.RedisEvictionPolicy != nil {
		o.RedisEvictionPolicy(policy, evicts)
	}
}

func (o *Observer) denialCacheDeaf(deaf bool) {
	if o != nil && o.DenialCacheDeaf != nil {
		o.DenialCacheDeaf(deaf)
	}
}

func (o *Observer) storeDegraded(feature string, degraded bool) {
	if o != nil && o.StoreDegraded != nil {
		o.StoreDegraded(feature, degraded)
	}
}

func (o *Observer) slotHeld(acquired bool, held time.Duration) {
	if o != nil && o.SlotHeld != nil {
		o.SlotHeld(acquired, held)
	}
}

func (o *Observer) queued(entered bool) {
	if o != nil && o.Queued != nil {
		o.Queued(entered)
	}
}

func (o *Observer) held(e observe.HoldEvent) {
	if o != nil && o.Held != nil {
		o.Held(e)
	}
}

// wantsDecided reports whether o is told of decisions: whether to time them.
func (o *Observer) wantsDecided() bool { return o != nil && o.Decided != nil }

// wantsSlotHeld reports whether o is told of held slots: whether to time them.
func (o *Observer) wantsSlotHeld() bool { return o != nil && o.SlotHeld != nil }

// DecisionEvent is what an [Observer] is told of one decision. It is passed by value, so that
// reporting allocates nothing.
type DecisionEvent struct {
	// Allowed reports whether the request was admitted.
	Allowed bool
	// Source is what decided.
	Source observe.Source
	// Latency is how long the limiter took to decide, the store call included (the memory
	// store's too: reading the clock twice adds about 50–70 ns to its decision, paid only with a
	// Decided hook).
	Latency time.Duration
	// Results are every policy's results, in the limiter's order, each with its Policy (see
	// Policy.Shadow). They are valid only during the call: copy what you keep.
	Results []PolicyResult
	// Store describes the store that was called, for the database attributes of a metric: nil
	// for a store that does not describe itself (one written outside this package, say).
	Store *observe.StoreInfo
}

// describedStore is the capability of a store that describes itself (see observe.StoreInfo).
type describedStore interface{ info() *observe.StoreInfo }

// observedStore is the capability of a store that has an Observer (see [Store]).
type observedStore interface{ Observer() *Observer }

// observerOf returns the observer of s, or nil.
func observerOf(s Store) *Observer {
	if o, ok := capability[observedStore](s); ok {
		return o.Observer()
	}
	return nil
}

// The features a store reports running without (see observe.Degradations).
const (
	degradedMergedChecks  = "merged_checks"
	degradedCompactExpiry = "compact_expiry"
	degradedDenialCache   = "denial_cache"
	degradedFunctions     = "functions"
	degradedQuotaLeases   = "quota_leases"
)

// degradations are the features one store reported to its observer it runs without, so that
// its Close reports each back once: a store that is gone runs without nothing, and keeps no
// alert firing. A feature is reported only when that is news, and nothing once the store is
// closed. Safe for concurrent use; a nil *degradations reports nothing.
type degradations struct {
	observer *Observer // nil: none
	mu       sync.Mutex
	on       []string // the features reported and not reported back, in their order
	closed   bool
}

// set tells the observer that the store runs without feature (on) or with it again.
func (d *degradations) set(feature string, on bool) {
	if d == nil || d.observer == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	i := slices.Index(d.on, feature)
	if d.closed || on == (i >= 0) {
		return
	}
	if on {
		d.on = append(d.on, feature)
	} else {
		d.on = slices.Delete(d.on, i, i+1)
	}
	d.observer.storeDegraded(feature, on)
}

// close reports back every feature reported, for a store being closed; nothing is reported
// after.
func (d *degradations) close() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	for _, f := range d.on {
		d.observer.storeDegraded(f, false)
	}
	d.on = nil
}
