package ratelimitprom

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// DefaultBuckets returns the upper bounds, in seconds, of ratelimit_decision_duration_seconds
// unless [WithBuckets] sets others: 10 µs (a fast store on loopback) to 1 s (far beyond any
// store deadline).
func DefaultBuckets() []float64 { return observe.Buckets() }

// Observer counts decisions, store errors and breaker changes as Prometheus metrics (see the
// package documentation for their names). Its [Observer.Hooks] are the [ratelimit.Observer]
// to give to stores with [ratelimit.WithObserver]; it is a [prometheus.Collector], to register
// once. It is also
// the Reporter of the rules module's Engine (RulesApplied, RulesRejected, RulesEmpty), to give to it
// with rules.WithReporter; this module does not depend on the rules module. It is safe for
// concurrent use; one Observer may serve many stores and engines.
type Observer struct {
	requests     *prometheus.CounterVec
	decisions    *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	storeErrors  *prometheus.CounterVec
	breakerOpen  prometheus.Gauge
	deafCaches   prometheus.Gauge
	degraded     *prometheus.GaugeVec
	transitions  *prometheus.CounterVec
	memoryFull   *prometheus.CounterVec
	keyFallback  *prometheus.CounterVec
	holders      prometheus.Gauge     // requests holding in-flight slots
	holdTime     prometheus.Histogram // how long each held them
	oldHolders   prometheus.Gauge     // the deprecated ratelimit_active_request_leases, equal to holders
	oldHoldTime  prometheus.Histogram // the deprecated ratelimit_request_lease_duration_seconds, equal to holdTime
	queued       prometheus.Gauge
	queueTime    *prometheus.HistogramVec
	evictable    *prometheus.Desc
	rulesVersion *prometheus.Desc
	rulesLoads   *prometheus.CounterVec
	rulesEmpty   prometheus.Gauge
	holds        holdMetrics // of the holds of requests charged after they ran

	results []prometheus.Counter          // by observe.Result
	waited  []prometheus.Observer         // time in queue, by observe.Result
	latency []prometheus.Observer         // by observe.Source
	errors  map[string]prometheus.Counter // by observe.ErrorKind
	to      []prometheus.Counter          // transitions, by the observe.BreakerState changed to
	// policies and shadows hold the counters of the enforced policies and of the shadow ones
	// (shadow="true"), by name.
	policies, shadows observe.Policies[policyCounters]
	version           atomic.Pointer[string]        // of the rules last applied; nil before any
	fellBack          map[string]prometheus.Counter // by reason
	features          map[string]prometheus.Gauge   // of ratelimit_stores_degraded, by feature
	eviction          atomic.Pointer[eviction]      // the servers' maxmemory-policy last read; nil before any
	evicted           prometheus.Counter
	overflow          prometheus.Counter
	applied           prometheus.Counter
	rejected          prometheus.Counter
	hooks             *ratelimit.Observer // built once: one pointer, so the guards of every store given it are one observer
}

// policyCounters are one policy's decision counters, by source and then denied (0) or
// allowed (1).
type policyCounters [][2]prometheus.Counter

var _ prometheus.Collector = (*Observer)(nil)

// Option configures an [Observer].
type Option func(*config)

type config struct {
	buckets    []float64
	bucketsSet bool // WithBuckets was given
}

// WithBuckets sets the upper bounds, in seconds, of the decision duration histogram, in
// increasing order (New panics otherwise, as prometheus.NewHistogramVec does); by default
// [DefaultBuckets]. Given twice, New panics too: the second would silently replace the first.
func WithBuckets(bounds ...float64) Option {
	return func(c *config) {
		if c.bucketsSet {
			panic("ratelimit/prometheus: New: WithBuckets given twice: the second would silently replace the first; give it once")
		}
		c.buckets, c.bucketsSet = slices.Clone(bounds), true
	}
}

// New returns an Observer, whose metrics are exported once it is registered, e.g. with
// prometheus.MustRegister.
func New(opts ...Option) *Observer {
	c := config{buckets: observe.Buckets()}
	for _, opt := range opts {
		opt(&c)
	}
	o := &Observer{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_requests_total",
			Help: "Requests a rate-limit guard answered, once each, by the result its client saw.",
		}, []string{"result"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_decisions_total",
			Help: "Verdicts of each rate-limit policy, by outcome, by what decided (store, denial_cache, fallback, lease), and whether the policy is a shadow (its denials refused no client).",
		}, []string{"policy", "outcome", "source", "shadow"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ratelimit_decision_duration_seconds",
			Help:    "Time the rate limiter took to decide, the store call included.",
			Buckets: c.buckets,
		}, []string{"source"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_store_errors_total",
			Help: "Failed rate-limit store calls, by kind (unavailable, timeout, breaker_open, busy, oom, readonly, script, other).",
		}, []string{"kind"}),
		breakerOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ratelimit_breaker_open",
			Help: "Circuit breakers of the rate-limit stores that are not closed: 1 while a store's breaker is open or half-open.",
		}),
		deafCaches: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ratelimit_denial_caches_deaf",
			Help: "Denial caches of Redis stores that do not hear the fleet's refunds and resets now (not yet subscribed, or subscription broken): they cache no new denial, so denied identities cost Redis calls again.",
		}),
		degraded: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ratelimit_stores_degraded",
			Help: "Rate-limit stores running without a feature they were made with, by feature (merged_checks, compact_expiry, denial_cache, functions, quota_leases): each decides the same, at a higher cost to Redis.",
		}, []string{"feature"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_breaker_transitions_total",
			Help: "Circuit breaker changes of the rate-limit stores, by the state changed to.",
		}, []string{"to"}),
		memoryFull: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_memory_store_full_total",
			Help: "New identities a memory store at its bound made room for, by how: evicted (the least-used state, under half its limit, was forgotten) or overflow (decided on the shared overflow quota).",
		}, []string{"how"}),
		keyFallback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_key_fallbacks_total",
			Help: "Requests a guard limited by a fallback, by reason: by their client IP, their key function having found no key (no_header, no_user, no_route, no_key); by the address of the trusted proxy they came from, which named no client (no_proxy_header); by the guard's own policies, their Resolver having failed (resolver_failed).",
		}, []string{"reason"}),
		evictable: prometheus.NewDesc("ratelimit_redis_evictable",
			"1 when the Redis servers of a store may evict the limiter's keys (maxmemory-policy is not noeviction, and a maxmemory is set), handing their identities fresh quotas; 0 when they may not; the policy as read, \"unknown\" when it could not be.",
			[]string{"policy"}, nil),
		holders: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ratelimit_inflight_slot_holders",
			Help: "Requests holding in-flight slots (algorithms.InFlight) now.",
		}),
		holdTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ratelimit_inflight_slot_hold_duration_seconds",
			Help:    "How long requests held their in-flight slots.",
			Buckets: holdBuckets,
		}),
		oldHolders: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ratelimit_active_request_leases",
			Help: "Deprecated: use ratelimit_inflight_slot_holders (the same figure; this name goes in the next release). Requests holding in-flight slots now.",
		}),
		oldHoldTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ratelimit_request_lease_duration_seconds",
			Help:    "Deprecated: use ratelimit_inflight_slot_hold_duration_seconds (the same figure; this name goes in the next release). How long requests held their in-flight slots.",
			Buckets: holdBuckets,
		}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ratelimit_queued_requests",
			Help: "Requests waiting now: for an in-flight slot (WaitForSlot), or for their slot under a shaping policy.",
		}),
		queueTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ratelimit_request_time_in_queue_seconds",
			Help:    "How long requests waited before they proceeded or were refused, by result; only requests that waited.",
			Buckets: holdBuckets,
		}, []string{"result"}),
		rulesVersion: prometheus.NewDesc("ratelimit_rules_version_info",
			"The version of the rate-limit rules in use (the latest applied), with value 1.",
			[]string{"version"}, nil),
		rulesLoads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_rules_loads_total",
			Help: "Rate-limit rules documents applied or rejected (the last good rules stay in use), by result.",
		}, []string{"result"}),
		rulesEmpty: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ratelimit_rules_empty",
			Help: "1 while the rate-limit rules last applied are none (a document of allow_empty: true): no request is limited by them.",
		}),
		holds: newHoldMetrics(),
	}
	for _, s := range observe.Sources() {
		o.latency = append(o.latency, o.duration.WithLabelValues(s.String()))
	}
	o.errors = map[string]prometheus.Counter{}
	for _, k := range observe.ErrorKinds() {
		o.errors[k] = o.storeErrors.WithLabelValues(k)
	}
	for _, r := range observe.Results() {
		o.results = append(o.results, o.requests.WithLabelValues(r.String()))
		o.waited = append(o.waited, o.queueTime.WithLabelValues(r.String()))
	}
	for _, s := range observe.BreakerStates() {
		o.to = append(o.to, o.transitions.WithLabelValues(s.String()))
	}
	o.fellBack = map[string]prometheus.Counter{}
	for _, r := range observe.KeyFallbackReasons() {
		o.fellBack[r] = o.keyFallback.WithLabelValues(r)
	}
	o.features = map[string]prometheus.Gauge{}
	for _, f := range observe.Degradations() {
		o.features[f] = o.degraded.WithLabelValues(f) // every feature's series, at 0 until a store degrades
	}
	o.evicted = o.memoryFull.WithLabelValues("evicted")
	o.overflow = o.memoryFull.WithLabelValues("overflow")
	o.applied = o.rulesLoads.WithLabelValues("applied")
	o.rejected = o.rulesLoads.WithLabelValues("rejected")
	o.policies.New = func(label string) *policyCounters { return o.resolve(label, "false") }
	o.shadows.New = func(label string) *policyCounters { return o.resolve(label, "true") }
	o.hooks = &ratelimit.Observer{Decided: o.decided, Answered: o.answered, StoreFailed: o.storeFailed,
		BreakerChanged: o.breakerChanged, MemoryStoreFull: o.memoryStoreFull, KeyFellBack: o.keyFellBack,
		RedisEvictionPolicy: o.redisEvictionPolicy, DenialCacheDeaf: o.denialCacheDeaf,
		StoreDegraded: o.storeDegraded, SlotHeld: o.slotHeld, Queued: o.queuedHook, Held: o.holds.held}
	return o
}

// Hooks returns the hooks that count into o, every one set, to give to stores:
// ratelimit.WithObserver(o.Hooks()). It is the same pointer at each call: guards over stores
// given it are one observer, which counts a request they all check once.
func (o *Observer) Hooks() *ratelimit.Observer { return o.hooks }

// Describe implements [prometheus.Collector].
func (o *Observer) Describe(ch chan<- *prometheus.Desc) {
	o.requests.Describe(ch)
	o.decisions.Describe(ch)
	o.duration.Describe(ch)
	o.storeErrors.Describe(ch)
	o.breakerOpen.Describe(ch)
	o.deafCaches.Describe(ch)
	o.degraded.Describe(ch)
	o.transitions.Describe(ch)
	o.memoryFull.Describe(ch)
	o.keyFallback.Describe(ch)
	o.holders.Describe(ch)
	o.holdTime.Describe(ch)
	o.oldHolders.Describe(ch)
	o.oldHoldTime.Describe(ch)
	o.queued.Describe(ch)
	o.queueTime.Describe(ch)
	ch <- o.evictable
	ch <- o.rulesVersion
	o.rulesLoads.Describe(ch)
	o.rulesEmpty.Describe(ch)
	for _, c := range o.holds.collectors() {
		c.Describe(ch)
	}
}

// Collect implements [prometheus.Collector].
func (o *Observer) Collect(ch chan<- prometheus.Metric) {
	o.requests.Collect(ch)
	o.decisions.Collect(ch)
	o.duration.Collect(ch)
	o.storeErrors.Collect(ch)
	o.breakerOpen.Collect(ch)
	o.deafCaches.Collect(ch)
	o.degraded.Collect(ch)
	o.transitions.Collect(ch)
	o.memoryFull.Collect(ch)
	o.keyFallback.Collect(ch)
	o.holders.Collect(ch)
	o.holdTime.Collect(ch)
	o.oldHolders.Collect(ch)
	o.oldHoldTime.Collect(ch)
	o.queued.Collect(ch)
	o.queueTime.Collect(ch)
	if e := o.eviction.Load(); e != nil {
		ch <- prometheus.MustNewConstMetric(o.evictable, prometheus.GaugeValue, e.value, e.policy)
	}
	if v := o.version.Load(); v != nil {
		ch <- prometheus.MustNewConstMetric(o.rulesVersion, prometheus.GaugeValue, 1, *v)
	}
	o.rulesLoads.Collect(ch)
	o.rulesEmpty.Collect(ch)
	for _, c := range o.holds.collectors() {
		c.Collect(ch)
	}
}

// decided is the Decided hook: it observes the decision's latency and counts each
// policy's verdict.
func (o *Observer) decided(e ratelimit.DecisionEvent) {
	s := int(e.Source)
	if s >= len(o.latency) { // a source this module does not know counts as the store's
		s = 0
	}
	if e.Latency > 0 { // 0: not timed (an event made by hand, say)
		o.latency[s].Observe(e.Latency.Seconds())
	}
	for _, r := range e.Results {
		policies := &o.policies
		if r.Policy.Shadow {
			policies = &o.shadows
		}
		c := policies.Get(r.Policy.Name)
		if r.Allowed {
			(*c)[s][1].Inc()
		} else {
			(*c)[s][0].Inc()
		}
	}
}

// storeFailed is the StoreFailed hook: it counts the failure by kind.
func (o *Observer) storeFailed(err error) {
	c, ok := o.errors[observe.ErrorKind(err)]
	if !ok {
		c = o.errors["other"]
	}
	c.Inc()
}

// answered is the Answered hook: it counts the request by its result.
func (o *Observer) answered(e observe.RequestEvent) {
	if int(e.Result) < len(o.results) {
		o.results[e.Result].Inc()
		if e.Waited > 0 {
			o.waited[e.Result].Observe(e.Waited.Seconds())
		}
	}
}

// breakerChanged is the BreakerChanged hook: ratelimit_breaker_open counts the breakers
// that are not closed, and the transition is counted by the state changed to.
func (o *Observer) breakerChanged(from, to observe.BreakerState) {
	switch {
	case from == observe.BreakerClosed && to != observe.BreakerClosed:
		o.breakerOpen.Inc()
	case from != observe.BreakerClosed && to == observe.BreakerClosed:
		o.breakerOpen.Dec()
	}
	if int(to) < len(o.to) {
		o.to[to].Inc()
	}
}

// denialCacheDeaf is the DenialCacheDeaf hook: ratelimit_denial_caches_deaf counts the
// denial caches that do not hear the fleet's refunds and resets.
func (o *Observer) denialCacheDeaf(deaf bool) {
	if deaf {
		o.deafCaches.Inc()
	} else {
		o.deafCaches.Dec()
	}
}

// storeDegraded is the StoreDegraded hook: ratelimit_stores_degraded counts the stores
// running without feature.
func (o *Observer) storeDegraded(feature string, degraded bool) {
	g, ok := o.features[feature]
	if !ok {
		return // a feature this module does not know: no series of its own, unbounded
	}
	if degraded {
		g.Inc()
	} else {
		g.Dec()
	}
}

// RulesApplied implements the rules module's Reporter: ratelimit_rules_version_info shows
// version (at most 128 bytes, as the rules module bounds it) in place of the version before,
// and the load is counted as applied.
func (o *Observer) RulesApplied(version string) {
	version = strings.ToValidUTF8(version, "\uFFFD") // a label value is UTF-8; the rules module's versions are already
	o.version.Store(&version)
	o.applied.Inc()
}

// RulesEmpty implements the rules module's EmptyReporter: ratelimit_rules_empty is 1 while the
// rules of the version last applied are none (a document of allow_empty: true), else 0.
func (o *Observer) RulesEmpty(_ string, empty bool) {
	v := 0.0
	if empty {
		v = 1
	}
	o.rulesEmpty.Set(v)
}

// RulesRejected implements the rules module's Reporter: the load is counted as rejected, and
// the version shown stays, as the rules in use do.
func (o *Observer) RulesRejected(error) {
	o.rejected.Inc()
}

// resolve returns the counters of the policy label, with the shadow label ("true" or "false").
func (o *Observer) resolve(label, shadow string) *policyCounters {
	var c policyCounters
	for _, s := range observe.Sources() {
		c = append(c, [2]prometheus.Counter{o.decisions.WithLabelValues(label, "denied", s.String(), shadow),
			o.decisions.WithLabelValues(label, "allowed", s.String(), shadow)})
	}
	return &c
}

// memoryStoreFull is the MemoryStoreFull hook: ratelimit_memory_store_full_total counts
// the new identities made room for, by how.
func (o *Observer) memoryStoreFull(overflow bool) {
	if overflow {
		o.overflow.Inc()
	} else {
		o.evicted.Inc()
	}
}

// keyFellBack is the KeyFellBack hook: ratelimit_key_fallbacks_total counts the
// requests a guard limited by a fallback (see observe.KeyFallbackReasons), by reason.
func (o *Observer) keyFellBack(reason string) {
	if c, ok := o.fellBack[reason]; ok {
		c.Inc()
	}
}

// eviction is the maxmemory-policy last read, as ratelimit_redis_evictable shows it.
type eviction struct {
	policy string
	value  float64
}

// redisEvictionPolicy is the RedisEvictionPolicy hook: ratelimit_redis_evictable shows the
// policy last read in place of the one before.
func (o *Observer) redisEvictionPolicy(policy string, evicts bool) {
	e := &eviction{policy: strings.ToValidUTF8(policy, "\uFFFD")}
	if policy == "" {
		e.policy = "unknown"
	}
	if evicts {
		e.value = 1
	}
	o.eviction.Store(e)
}

// holdBuckets are the upper bounds, in seconds, of the slot hold and queue durations: 1 ms to
// 5 minutes, as requests hold in-flight slots or wait for them.
var holdBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// slotHeld is the SlotHeld hook: ratelimit_inflight_slot_holders counts the requests holding
// in-flight slots, and ratelimit_inflight_slot_hold_duration_seconds observes how long each
// held them; their deprecated names, ratelimit_active_request_leases and
// ratelimit_request_lease_duration_seconds, are kept equal to them for one release.
func (o *Observer) slotHeld(acquired bool, held time.Duration) {
	if acquired {
		o.holders.Inc()
		o.oldHolders.Inc()
		return
	}
	o.holders.Dec()
	o.oldHolders.Dec()
	o.holdTime.Observe(held.Seconds())
	o.oldHoldTime.Observe(held.Seconds())
}

// queuedHook is the Queued hook: ratelimit_queued_requests counts the requests waiting.
func (o *Observer) queuedHook(entered bool) {
	if entered {
		o.queued.Inc()
	} else {
		o.queued.Dec()
	}
}
