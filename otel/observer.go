package ratelimitotel

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// ScopeName is the name of the meter of every [Observer]: the instrumentation scope of its
// instruments.
const ScopeName = "github.com/a7d3e0dd/ratelimit/otel"

// DefaultBuckets returns the bucket boundaries, in seconds, that ratelimit.decision.duration
// advises: 10 µs (a fast store on loopback) to 1 s (far beyond any store deadline).
func DefaultBuckets() []float64 { return observe.Buckets() }

// Observer records decisions, store errors and breaker changes as OpenTelemetry metrics (see
// the package documentation for the instruments). Its [Observer.Hooks] are the
// [ratelimit.Observer] to give to stores with [ratelimit.WithObserver]. It is also the Reporter of the rules module's Engine
// (RulesApplied, RulesRejected, RulesEmpty), to give to it with rules.WithReporter; this module does not
// depend on the rules module. It is safe for concurrent use; one Observer may serve many
// stores and engines.
type Observer struct {
	requests     metric.Int64Counter
	decisions    metric.Int64ObservableCounter
	duration     metric.Float64Histogram
	storeErrors  metric.Int64Counter
	breakerOpen  metric.Int64UpDownCounter
	deafCaches   metric.Int64UpDownCounter
	degraded     metric.Int64UpDownCounter
	transitions  metric.Int64Counter
	memoryFull   metric.Int64Counter
	keyFallback  metric.Int64Counter
	evictable    metric.Int64ObservableGauge
	holders      metric.Int64UpDownCounter // requests holding in-flight slots
	holdTime     metric.Float64Histogram   // how long each held them
	oldHolders   metric.Int64UpDownCounter // the deprecated ratelimit.active_request_leases, equal to holders
	oldHoldTime  metric.Float64Histogram   // the deprecated ratelimit.request_lease.duration, equal to holdTime
	queued       metric.Int64UpDownCounter
	queueTime    metric.Float64Histogram
	dbDuration   metric.Float64Histogram
	rulesVersion metric.Int64ObservableGauge
	rulesLoads   metric.Int64Counter
	rulesEmpty   metric.Int64ObservableGauge
	holds        holdInstruments // of the holds of requests charged after they ran

	// The options of every measurement, built once: an attribute set wrapped in an option
	// allocates when it is built, not when it is used.
	latency [][]metric.RecordOption       // by observe.Source
	errors  map[string][]metric.AddOption // by observe.ErrorKind
	results [][]metric.AddOption          // by observe.Result
	to      [][]metric.AddOption          // transitions, by the observe.BreakerState changed to
	// policies and shadows hold the counts of the enforced policies and of the shadow ones
	// (ratelimit.policy.shadow true), by name.
	policies, shadows observe.Policies[policyCounts]
	version           atomic.Pointer[[]metric.ObserveOption] // those of the rules version last applied; nil before any
	empty             atomic.Int64                           // 1 while the rules last applied are none
	fellBack          map[string][]metric.AddOption          // by reason
	features          map[string][]metric.AddOption          // of ratelimit.store.degraded, by feature
	waited            [][]metric.RecordOption                // by observe.Result
	db                sync.Map                               // *observe.StoreInfo → []metric.RecordOption of db.client.operation.duration
	eviction          atomic.Pointer[evictionObs]            // the servers' maxmemory-policy last read; nil before any
	evicted           []metric.AddOption
	overflow          []metric.AddOption
	applied           []metric.AddOption
	rejected          []metric.AddOption
	hooks             *ratelimit.Observer // built once: one pointer, so the guards of every store given it are one observer
}

// policyCounts are one policy's decisions, by source and then denied (0) or allowed (1), and
// the options they are observed with. Decided adds to them; the SDK reads them when it
// collects, through the callback of ratelimit.decisions.
type policyCounts struct {
	n    [][2]atomic.Int64
	opts [][2][]metric.ObserveOption
}

// New returns an Observer whose instruments come from a meter of mp, named [ScopeName]. The
// callback that reports ratelimit.decisions stays registered as long as mp lives: make one
// Observer per MeterProvider, and give it to every store.
func New(mp metric.MeterProvider) (*Observer, error) {
	m := mp.Meter(ScopeName)
	o := &Observer{}
	o.policies.New = func(policy string) *policyCounts { return newCounts(policy, false) } // before the callback is registered
	o.shadows.New = func(policy string) *policyCounts { return newCounts(policy, true) }
	var errs [22]error
	o.decisions, errs[0] = m.Int64ObservableCounter("ratelimit.policy.decisions", metric.WithUnit("{decision}"),
		metric.WithDescription("Verdicts of each rate-limit policy, by outcome, by what decided (store, denial_cache, fallback, lease), and whether the policy is a shadow (its denials refused no client)."),
		metric.WithInt64Callback(o.observe))
	o.duration, errs[1] = m.Float64Histogram("ratelimit.decision.duration", metric.WithUnit("s"),
		metric.WithDescription("Time the rate limiter took to decide, the store call included."),
		metric.WithExplicitBucketBoundaries(observe.Buckets()...))
	o.storeErrors, errs[2] = m.Int64Counter("ratelimit.store.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Failed rate-limit store calls, by error.type (unavailable, timeout, busy, oom, readonly, script, other, breaker_open)."))
	o.breakerOpen, errs[3] = m.Int64UpDownCounter("ratelimit.breaker.open", metric.WithUnit("{breaker}"),
		metric.WithDescription("Circuit breakers of the rate-limit stores that are not closed: 1 while a store's breaker is open or half-open."))
	o.transitions, errs[4] = m.Int64Counter("ratelimit.breaker.transitions", metric.WithUnit("{transition}"),
		metric.WithDescription("Circuit breaker changes of the rate-limit stores, by the state changed to."))
	o.rulesVersion, errs[5] = m.Int64ObservableGauge("ratelimit.rules.version", metric.WithUnit("{version}"),
		metric.WithDescription("The version of the rate-limit rules in use (the latest applied), with value 1."),
		metric.WithInt64Callback(o.observeVersion))
	o.rulesLoads, errs[6] = m.Int64Counter("ratelimit.rules.loads", metric.WithUnit("{load}"),
		metric.WithDescription("Rate-limit rules documents applied or rejected (the last good rules stay in use), by result."))
	o.requests, errs[7] = m.Int64Counter("ratelimit.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Requests a rate-limit guard answered, once each, by the result its client saw."))
	o.memoryFull, errs[8] = m.Int64Counter("ratelimit.memory_store.full", metric.WithUnit("{identity}"),
		metric.WithDescription("New identities a memory store at its bound made room for, by how: evicted (the least-used state, under half its limit, was forgotten) or overflow (decided on the shared overflow quota)."))
	o.keyFallback, errs[9] = m.Int64Counter("ratelimit.key.fallbacks", metric.WithUnit("{request}"),
		metric.WithDescription("Requests a guard limited by a fallback, by reason: by their client IP, their key function having found no key (no_header, no_user, no_route, no_key); by the address of the trusted proxy they came from, which named no client (no_proxy_header); by the guard's own policies, their Resolver having failed (resolver_failed)."))
	o.evictable, errs[10] = m.Int64ObservableGauge("ratelimit.redis.evictable", metric.WithUnit("1"),
		metric.WithDescription("1 when the Redis servers of a store may evict the limiter's keys (maxmemory-policy is not noeviction), handing their identities fresh quotas; 0 when they may not."),
		metric.WithInt64Callback(o.observeEviction))
	o.holders, errs[11] = m.Int64UpDownCounter("ratelimit.inflight_slot.holders", metric.WithUnit("{request}"),
		metric.WithDescription("Requests holding in-flight slots (algorithms.InFlight) now."))
	o.holdTime, errs[12] = m.Float64Histogram("ratelimit.inflight_slot.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("How long requests held their in-flight slots."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	o.oldHolders, errs[19] = m.Int64UpDownCounter("ratelimit.active_request_leases", metric.WithUnit("{request}"),
		metric.WithDescription("Deprecated: use ratelimit.inflight_slot.holders (the same figure; this name goes in the next release). Requests holding in-flight slots now."))
	o.oldHoldTime, errs[20] = m.Float64Histogram("ratelimit.request_lease.duration", metric.WithUnit("s"),
		metric.WithDescription("Deprecated: use ratelimit.inflight_slot.hold.duration (the same figure; this name goes in the next release). How long requests held their in-flight slots."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	o.queued, errs[13] = m.Int64UpDownCounter("ratelimit.queued_requests", metric.WithUnit("{request}"),
		metric.WithDescription("Requests waiting now: for an in-flight slot (WaitForSlot), or for their slot under a shaping policy."))
	o.queueTime, errs[14] = m.Float64Histogram("ratelimit.request.time_in_queue", metric.WithUnit("s"),
		metric.WithDescription("How long requests waited before they proceeded or were refused, by result; only requests that waited."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	o.dbDuration, errs[15] = m.Float64Histogram("db.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the rate limiter's Redis calls (a check of every policy is one FCALL)."),
		metric.WithExplicitBucketBoundaries(observe.Buckets()...))
	o.deafCaches, errs[16] = m.Int64UpDownCounter("ratelimit.denial_cache.deaf", metric.WithUnit("{cache}"),
		metric.WithDescription("Denial caches of Redis stores that do not hear the fleet's refunds and resets now (not yet subscribed, or subscription broken): they cache no new denial, so denied identities cost Redis calls again."))
	o.degraded, errs[17] = m.Int64UpDownCounter("ratelimit.store.degraded", metric.WithUnit("{store}"),
		metric.WithDescription("Rate-limit stores running without a feature they were made with, by ratelimit.store.feature (merged_checks, compact_expiry, denial_cache, functions, quota_leases): each decides the same, at a higher cost to Redis."))
	o.rulesEmpty, errs[18] = m.Int64ObservableGauge("ratelimit.rules.empty", metric.WithUnit("1"),
		metric.WithDescription("1 while the rate-limit rules last applied are none (a document of allow_empty: true): no request is limited by them."),
		metric.WithInt64Callback(func(_ context.Context, obs metric.Int64Observer) error {
			obs.Observe(o.empty.Load())
			return nil
		}))
	o.holds, errs[21] = newHoldInstruments(m)
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	for _, s := range observe.Sources() {
		o.latency = append(o.latency, []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("ratelimit.source", s.String())))})
	}
	o.errors = map[string][]metric.AddOption{}
	for _, k := range observe.ErrorKinds() {
		o.errors[k] = addOptions(attribute.String("error.type", k))
	}
	for _, r := range observe.Results() {
		o.results = append(o.results, addOptions(attribute.String("ratelimit.result", r.String())))
	}
	for _, s := range observe.BreakerStates() {
		o.to = append(o.to, addOptions(attribute.String("ratelimit.breaker.state", s.String())))
	}
	o.fellBack = map[string][]metric.AddOption{}
	for _, r := range observe.KeyFallbackReasons() {
		o.fellBack[r] = addOptions(attribute.String("ratelimit.key.fallback_reason", r))
	}
	o.features = map[string][]metric.AddOption{}
	for _, f := range observe.Degradations() {
		o.features[f] = addOptions(attribute.String("ratelimit.store.feature", f))
		o.degraded.Add(context.Background(), 0, o.features[f]...) // every feature's series, at 0 until a store degrades
	}
	o.waited = make([][]metric.RecordOption, len(o.results))
	for _, r := range observe.Results() {
		o.waited[r] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("ratelimit.result", r.String())))}
	}
	o.evicted = addOptions(attribute.String("ratelimit.memory_store.action", "evicted"))
	o.overflow = addOptions(attribute.String("ratelimit.memory_store.action", "overflow"))
	o.applied = addOptions(attribute.String("ratelimit.rules.result", "applied"))
	o.rejected = addOptions(attribute.String("ratelimit.rules.result", "rejected"))
	// Both series exist from the start, at 0, so that the first rejection is an increase.
	o.rulesLoads.Add(context.Background(), 0, o.applied...)
	o.rulesLoads.Add(context.Background(), 0, o.rejected...)
	o.hooks = &ratelimit.Observer{Decided: o.decided, Answered: o.answered, StoreFailed: o.storeFailed,
		BreakerChanged: o.breakerChanged, MemoryStoreFull: o.memoryStoreFull, KeyFellBack: o.keyFellBack,
		RedisEvictionPolicy: o.redisEvictionPolicy, DenialCacheDeaf: o.denialCacheDeaf,
		StoreDegraded: o.storeDegraded, SlotHeld: o.slotHeld, Queued: o.queuedHook, Held: o.holds.held}
	return o, nil
}

// Hooks returns the hooks that record into o, every one set, to give to stores:
// ratelimit.WithObserver(o.Hooks()). It is the same pointer at each call: guards over stores
// given it are one observer, which counts a request they all check once.
func (o *Observer) Hooks() *ratelimit.Observer { return o.hooks }

// observe reports the decisions counted so far: the callback of ratelimit.decisions.
func (o *Observer) observe(_ context.Context, obs metric.Int64Observer) error {
	o.policies.Each(func(p *policyCounts) { p.observe(obs) })
	o.shadows.Each(func(p *policyCounts) { p.observe(obs) })
	return nil
}

// observeVersion reports the version of the rules in use: the callback of
// ratelimit.rules.version.
func (o *Observer) observeVersion(_ context.Context, obs metric.Int64Observer) error {
	if opts := o.version.Load(); opts != nil {
		obs.Observe(1, *opts...)
	}
	return nil
}

// addOptions returns the options of a measurement with the attributes kvs.
func addOptions(kvs ...attribute.KeyValue) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
}

// decided is the Decided hook: it records the decision's latency and counts each
// policy's verdict.
func (o *Observer) decided(e ratelimit.DecisionEvent) {
	ctx := context.Background() // a decision has no request context
	s := int(e.Source)
	if s >= len(o.latency) { // a source this module does not know counts as the store's
		s = 0
	}
	if e.Latency > 0 {
		o.duration.Record(ctx, e.Latency.Seconds(), o.latency[s]...)
		if e.Source == observe.SourceStore && e.Store != nil && e.Store.System == "redis" {
			o.dbDuration.Record(ctx, e.Latency.Seconds(), o.dbOptions(e.Store)...)
		}
	}
	for _, r := range e.Results {
		policies := &o.policies
		if r.Policy.Shadow {
			policies = &o.shadows
		}
		p := policies.Get(r.Policy.Name)
		if r.Allowed {
			p.n[s][1].Add(1)
		} else {
			p.n[s][0].Add(1)
		}
	}
}

// storeFailed is the StoreFailed hook: it counts the failure by kind.
func (o *Observer) storeFailed(err error) {
	opts, ok := o.errors[observe.ErrorKind(err)]
	if !ok {
		opts = o.errors["other"]
	}
	o.storeErrors.Add(context.Background(), 1, opts...)
}

// answered is the Answered hook: it counts the request by its result.
func (o *Observer) answered(e observe.RequestEvent) {
	if int(e.Result) < len(o.results) {
		o.requests.Add(context.Background(), 1, o.results[e.Result]...)
		if e.Waited > 0 {
			o.queueTime.Record(context.Background(), e.Waited.Seconds(), o.waited[e.Result]...)
		}
	}
}

// denialCacheDeaf is the DenialCacheDeaf hook: ratelimit.denial_cache.deaf counts the
// denial caches that do not hear the fleet's refunds and resets.
func (o *Observer) denialCacheDeaf(deaf bool) {
	if deaf {
		o.deafCaches.Add(context.Background(), 1)
	} else {
		o.deafCaches.Add(context.Background(), -1)
	}
}

// storeDegraded is the StoreDegraded hook: ratelimit.store.degraded counts the stores
// running without feature (attribute ratelimit.store.feature).
func (o *Observer) storeDegraded(feature string, degraded bool) {
	opts, ok := o.features[feature]
	if !ok {
		return // a feature this module does not know: no series of its own, unbounded
	}
	if degraded {
		o.degraded.Add(context.Background(), 1, opts...)
	} else {
		o.degraded.Add(context.Background(), -1, opts...)
	}
}

// breakerChanged is the BreakerChanged hook: ratelimit.breaker.open counts the breakers
// that are not closed, and the transition is counted by the state changed to.
func (o *Observer) breakerChanged(from, to observe.BreakerState) {
	ctx := context.Background()
	switch {
	case from == observe.BreakerClosed && to != observe.BreakerClosed:
		o.breakerOpen.Add(ctx, 1)
	case from != observe.BreakerClosed && to == observe.BreakerClosed:
		o.breakerOpen.Add(ctx, -1)
	}
	if int(to) < len(o.to) {
		o.transitions.Add(ctx, 1, o.to[to]...)
	}
}

// RulesApplied implements the rules module's Reporter: ratelimit.rules.version reports
// version (at most 128 bytes, as the rules module bounds it) in place of the version before,
// and the load is counted as applied.
func (o *Observer) RulesApplied(version string) {
	version = strings.ToValidUTF8(version, "\uFFFD") // as the Prometheus observer labels it
	opts := []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("ratelimit.rules.version", version)))}
	o.version.Store(&opts)
	o.rulesLoads.Add(context.Background(), 1, o.applied...)
}

// RulesEmpty implements the rules module's EmptyReporter: ratelimit.rules.empty is 1 while the
// rules of the version last applied are none (a document of allow_empty: true), else 0.
func (o *Observer) RulesEmpty(_ string, empty bool) {
	v := int64(0)
	if empty {
		v = 1
	}
	o.empty.Store(v)
}

// RulesRejected implements the rules module's Reporter: the load is counted as rejected, and
// the version reported stays, as the rules in use do.
func (o *Observer) RulesRejected(error) {
	o.rulesLoads.Add(context.Background(), 1, o.rejected...)
}

// newCounts returns the counts of the policy attribute, at zero, shadow or enforced.
func newCounts(policy string, shadow bool) *policyCounts {
	sources := observe.Sources()
	p := &policyCounts{n: make([][2]atomic.Int64, len(sources)), opts: make([][2][]metric.ObserveOption, len(sources))}
	for i, s := range sources {
		for j, outcome := range [...]string{"denied", "allowed"} {
			set := attribute.NewSet(attribute.String("ratelimit.policy", policy), attribute.String("ratelimit.decision", outcome),
				attribute.String("ratelimit.source", s.String()), attribute.Bool("ratelimit.policy.shadow", shadow))
			p.opts[i][j] = []metric.ObserveOption{metric.WithAttributeSet(set)}
		}
	}
	return p
}

// observe reports the counts to obs.
func (p *policyCounts) observe(obs metric.Int64Observer) {
	for i := range p.n {
		for j := range p.n[i] {
			obs.Observe(p.n[i][j].Load(), p.opts[i][j]...)
		}
	}
}

// memoryStoreFull is the MemoryStoreFull hook: ratelimit.memory_store.full counts the new
// identities made room for, by how.
func (o *Observer) memoryStoreFull(overflow bool) {
	if overflow {
		o.memoryFull.Add(context.Background(), 1, o.overflow...)
	} else {
		o.memoryFull.Add(context.Background(), 1, o.evicted...)
	}
}

// keyFellBack is the KeyFellBack hook: ratelimit.key.fallbacks counts the requests a
// guard limited by a fallback (see observe.KeyFallbackReasons), by reason.
func (o *Observer) keyFellBack(reason string) {
	if opts, ok := o.fellBack[reason]; ok {
		o.keyFallback.Add(context.Background(), 1, opts...)
	}
}

// evictionObs is the maxmemory-policy last read, as ratelimit.redis.evictable reports it.
type evictionObs struct {
	value int64
	opts  []metric.ObserveOption
}

// redisEvictionPolicy is the RedisEvictionPolicy hook: ratelimit.redis.evictable reports the
// policy last read (attribute ratelimit.redis.maxmemory_policy, "unknown" when it could not
// be read) in place of the one before.
func (o *Observer) redisEvictionPolicy(policy string, evicts bool) {
	if policy == "" {
		policy = "unknown"
	}
	policy = strings.ToValidUTF8(policy, "\uFFFD") // a Redis reply, as the Prometheus observer labels it
	e := &evictionObs{opts: []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(
		attribute.String("ratelimit.redis.maxmemory_policy", policy)))}}
	if evicts {
		e.value = 1
	}
	o.eviction.Store(e)
}

// observeEviction reports the policy last read: the callback of ratelimit.redis.evictable.
func (o *Observer) observeEviction(_ context.Context, obs metric.Int64Observer) error {
	if e := o.eviction.Load(); e != nil {
		obs.Observe(e.value, e.opts...)
	}
	return nil
}

// holdBuckets are the bucket boundaries, in seconds, of the slot hold and queue durations:
// 1 ms to 5 minutes, as requests hold in-flight slots or wait for them.
var holdBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// slotHeld is the SlotHeld hook: ratelimit.inflight_slot.holders counts the requests holding
// in-flight slots, and ratelimit.inflight_slot.hold.duration records how long each held them;
// their deprecated names, ratelimit.active_request_leases and ratelimit.request_lease.duration,
// are kept equal to them for one release.
func (o *Observer) slotHeld(acquired bool, held time.Duration) {
	ctx := context.Background()
	if acquired {
		o.holders.Add(ctx, 1)
		o.oldHolders.Add(ctx, 1)
		return
	}
	o.holders.Add(ctx, -1)
	o.oldHolders.Add(ctx, -1)
	o.holdTime.Record(ctx, held.Seconds())
	o.oldHoldTime.Record(ctx, held.Seconds())
}

// queuedHook is the Queued hook: ratelimit.queued_requests counts the requests
// waiting.
func (o *Observer) queuedHook(entered bool) {
	if entered {
		o.queued.Add(context.Background(), 1)
	} else {
		o.queued.Add(context.Background(), -1)
	}
}

// dbOptions returns the attributes of db.client.operation.duration for the store info
// describes, built once per store.
func (o *Observer) dbOptions(info *observe.StoreInfo) []metric.RecordOption {
	if v, ok := o.db.Load(info); ok {
		return v.([]metric.RecordOption)
	}
	kvs := []attribute.KeyValue{attribute.String("db.system.name", info.System),
		attribute.String("db.operation.name", info.Operation), attribute.String("db.stored_procedure.name", info.Procedure)}
	if info.ServerAddress != "" {
		kvs = append(kvs, attribute.String("server.address", info.ServerAddress), attribute.Int("server.port", info.ServerPort))
	}
	opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
	v, _ := o.db.LoadOrStore(info, opts)
	return v.([]metric.RecordOption)
}
