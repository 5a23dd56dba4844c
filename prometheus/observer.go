package ratelimitprom

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/a7d3e0dd/ratelimit"
)

// DefaultBuckets returns the upper bounds, in seconds, of ratelimit_decision_duration_seconds
// unless [WithBuckets] sets others: 10 µs (a memory store) to 1 s (far beyond any store
// deadline).
func DefaultBuckets() []float64 { return slices.Clone(defaultBuckets) }

var defaultBuckets = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
}

// maxPolicies bounds the policy label: the names beyond it are counted as otherPolicy.
const maxPolicies = 256

// otherPolicy is the policy label of the names beyond maxPolicies. A policy name starts with
// a-z, so no policy has it.
const otherPolicy = "_other"

// sources are the decision sources, indexed by their value; the label of each is its String.
var sources = [...]ratelimit.Source{ratelimit.SourceStore, ratelimit.SourceDenialCache, ratelimit.SourceFallback}

// Error kinds, the indexes of Observer.errors.
const (
	kindTimeout = iota
	kindUnavailable
	kindBreakerOpen
)

var kinds = [...]string{kindTimeout: "timeout", kindUnavailable: "unavailable", kindBreakerOpen: "breaker_open"}

// Observer counts decisions, store errors and breaker changes as Prometheus metrics (see the
// package documentation for their names). It is a [ratelimit.Observer], to give to stores
// with [ratelimit.WithObserver], and a [prometheus.Collector], to register once. It is safe
// for concurrent use; one Observer may serve many stores.
type Observer struct {
	decisions   *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	storeErrors *prometheus.CounterVec
	breakerOpen prometheus.Gauge
	transitions *prometheus.CounterVec

	latency [len(sources)]prometheus.Observer // by source
	errors  [len(kinds)]prometheus.Counter
	opened  prometheus.Counter
	closed  prometheus.Counter

	// policies maps a policy name to its counters. The map is never written once published:
	// adding a name (under mu) publishes a copy, so Decided reads it without a lock.
	policies atomic.Pointer[map[string]*policyCounters]
	other    atomic.Pointer[policyCounters] // the counters of otherPolicy, once needed
	mu       sync.Mutex
}

// policyCounters are one policy's decision counters, by source and then denied (0) or
// allowed (1).
type policyCounters [len(sources)][2]prometheus.Counter

var (
	_ ratelimit.Observer   = (*Observer)(nil)
	_ prometheus.Collector = (*Observer)(nil)
)

// Option configures an [Observer].
type Option func(*config)

type config struct {
	buckets []float64
}

// WithBuckets sets the upper bounds, in seconds, of the decision duration histogram, in
// increasing order (New panics otherwise, as prometheus.NewHistogramVec does); by default
// [DefaultBuckets].
func WithBuckets(bounds ...float64) Option {
	return func(c *config) { c.buckets = slices.Clone(bounds) }
}

// New returns an Observer, whose metrics are exported once it is registered, e.g. with
// prometheus.MustRegister.
func New(opts ...Option) *Observer {
	c := config{buckets: defaultBuckets}
	for _, opt := range opts {
		opt(&c)
	}
	o := &Observer{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_decisions_total",
			Help: "Verdicts of each rate-limit policy, by outcome and by what decided (store, denial_cache, fallback).",
		}, []string{"policy", "outcome", "source"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ratelimit_decision_duration_seconds",
			Help:    "Time the rate limiter took to decide, the store call included.",
			Buckets: c.buckets,
		}, []string{"source"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_store_errors_total",
			Help: "Failed rate-limit store calls, by kind (timeout, unavailable, breaker_open).",
		}, []string{"kind"}),
		breakerOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ratelimit_breaker_open",
			Help: "Open circuit breakers of the rate-limit stores: 1 while a store's breaker is open.",
		}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_breaker_transitions_total",
			Help: "Circuit breaker changes of the rate-limit stores, by the state changed to.",
		}, []string{"to"}),
	}
	for i, s := range sources {
		o.latency[i] = o.duration.WithLabelValues(s.String())
	}
	for i, k := range kinds {
		o.errors[i] = o.storeErrors.WithLabelValues(k)
	}
	o.opened = o.transitions.WithLabelValues("open")
	o.closed = o.transitions.WithLabelValues("closed")
	o.policies.Store(&map[string]*policyCounters{})
	return o
}

// Describe implements [prometheus.Collector].
func (o *Observer) Describe(ch chan<- *prometheus.Desc) {
	o.decisions.Describe(ch)
	o.duration.Describe(ch)
	o.storeErrors.Describe(ch)
	o.breakerOpen.Describe(ch)
	o.transitions.Describe(ch)
}

// Collect implements [prometheus.Collector].
func (o *Observer) Collect(ch chan<- prometheus.Metric) {
	o.decisions.Collect(ch)
	o.duration.Collect(ch)
	o.storeErrors.Collect(ch)
	o.breakerOpen.Collect(ch)
	o.transitions.Collect(ch)
}

// Decided implements [ratelimit.Observer]: it observes the decision's latency and counts each
// policy's verdict.
func (o *Observer) Decided(e ratelimit.DecisionEvent) {
	s := sourceIndex(e.Source)
	if e.Latency > 0 { // 0: a store in this process, not timed
		o.latency[s].Observe(e.Latency.Seconds())
	}
	known := *o.policies.Load()
	for _, r := range e.Results {
		c := known[r.Policy.Name]
		if c == nil {
			c = o.counters(r.Policy.Name, len(known))
		}
		if r.Allowed {
			c[s][1].Inc()
		} else {
			c[s][0].Inc()
		}
	}
}

// StoreFailed implements [ratelimit.Observer]: it counts the failure by kind.
func (o *Observer) StoreFailed(err error) {
	o.errors[kindOf(err)].Inc()
}

// BreakerChanged implements [ratelimit.Observer].
func (o *Observer) BreakerChanged(open bool) {
	if open {
		o.breakerOpen.Inc()
		o.opened.Inc()
	} else {
		o.breakerOpen.Dec()
		o.closed.Inc()
	}
}

// counters returns the counters of a policy name that is not in the map of n known names:
// those of otherPolicy once the map is full, else new ones, published in the map.
func (o *Observer) counters(name string, n int) *policyCounters {
	if n >= maxPolicies {
		if c := o.other.Load(); c != nil {
			return c
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	known := *o.policies.Load()
	if c := known[name]; c != nil { // added by another goroutine meanwhile
		return c
	}
	if len(known) >= maxPolicies {
		if c := o.other.Load(); c != nil {
			return c
		}
		c := o.resolve(otherPolicy)
		o.other.Store(c)
		return c
	}
	c := o.resolve(name)
	next := make(map[string]*policyCounters, len(known)+1)
	for k, v := range known {
		next[k] = v
	}
	next[name] = c
	o.policies.Store(&next)
	return c
}

// resolve returns the counters of the policy label.
func (o *Observer) resolve(label string) *policyCounters {
	c := new(policyCounters)
	for i, s := range sources {
		c[i][0] = o.decisions.WithLabelValues(label, "denied", s.String())
		c[i][1] = o.decisions.WithLabelValues(label, "allowed", s.String())
	}
	return c
}

// sourceIndex returns the index of s in sources; a source this module does not know is
// counted as the store's, which is what its String says.
func sourceIndex(s ratelimit.Source) int {
	if int(s) < len(sources) {
		return int(s)
	}
	return 0
}

// kindOf returns the kind of a store error. A call the breaker did not make is also of kind
// unavailable, so ErrBreakerOpen is asked first.
func kindOf(err error) int {
	switch {
	case errors.Is(err, ratelimit.ErrBreakerOpen):
		return kindBreakerOpen
	case errors.Is(err, ratelimit.ErrStoreTimeout):
		return kindTimeout
	}
	return kindUnavailable
}
