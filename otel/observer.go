package ratelimitotel

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/a7d3e0dd/ratelimit"
)

// ScopeName is the name of the meter of every [Observer]: the instrumentation scope of its
// instruments.
const ScopeName = "github.com/a7d3e0dd/ratelimit/otel"

// DefaultBuckets returns the bucket boundaries, in seconds, that ratelimit.decision.duration
// advises: 10 µs (a memory store) to 1 s (far beyond any store deadline).
func DefaultBuckets() []float64 { return slices.Clone(defaultBuckets) }

var defaultBuckets = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
}

// maxPolicies bounds the policy attribute: the names beyond it are recorded as otherPolicy.
const maxPolicies = 256

// otherPolicy is the policy attribute of the names beyond maxPolicies. A policy name starts
// with a-z, so no policy has it.
const otherPolicy = "_other"

// sources are the decision sources, indexed by their value; the attribute of each is its String.
var sources = [...]ratelimit.Source{ratelimit.SourceStore, ratelimit.SourceDenialCache, ratelimit.SourceFallback}

// Error kinds, the indexes of Observer.errors.
const (
	kindTimeout = iota
	kindUnavailable
	kindBreakerOpen
)

var kinds = [...]string{kindTimeout: "timeout", kindUnavailable: "unavailable", kindBreakerOpen: "breaker_open"}

// Observer records decisions, store errors and breaker changes as OpenTelemetry metrics (see
// the package documentation for the instruments). It is a [ratelimit.Observer], to give to
// stores with [ratelimit.WithObserver]. It is safe for concurrent use; one Observer may serve
// many stores.
type Observer struct {
	decisions   metric.Int64ObservableCounter
	duration    metric.Float64Histogram
	storeErrors metric.Int64Counter
	breakerOpen metric.Int64UpDownCounter
	transitions metric.Int64Counter

	// The options of every measurement, built once: an attribute set wrapped in an option
	// allocates when it is built, not when it is used.
	latency [len(sources)][]metric.RecordOption
	errors  [len(kinds)][]metric.AddOption
	opened  []metric.AddOption
	closed  []metric.AddOption

	// policies maps a policy name to its counts. The map is never written once published:
	// adding a name (under mu) publishes a copy, so Decided reads it without a lock.
	policies atomic.Pointer[map[string]*policyCounts]
	other    atomic.Pointer[policyCounts] // the counts of otherPolicy, once needed
	mu       sync.Mutex
}

// policyCounts are one policy's decisions, by source and then denied (0) or allowed (1), and
// the options they are observed with. Decided adds to them; the SDK reads them when it
// collects, through the callback of ratelimit.decisions.
type policyCounts struct {
	n    [len(sources)][2]atomic.Int64
	opts [len(sources)][2][]metric.ObserveOption
}

var _ ratelimit.Observer = (*Observer)(nil)

// New returns an Observer whose instruments come from a meter of mp, named [ScopeName]. The
// callback that reports ratelimit.decisions stays registered as long as mp lives: make one
// Observer per MeterProvider, and give it to every store.
func New(mp metric.MeterProvider) (*Observer, error) {
	m := mp.Meter(ScopeName)
	o := &Observer{}
	o.policies.Store(&map[string]*policyCounts{}) // before the callback is registered
	var errs [5]error
	o.decisions, errs[0] = m.Int64ObservableCounter("ratelimit.decisions", metric.WithUnit("{decision}"),
		metric.WithDescription("Verdicts of each rate-limit policy, by outcome and by what decided (store, denial_cache, fallback)."),
		metric.WithInt64Callback(o.observe))
	o.duration, errs[1] = m.Float64Histogram("ratelimit.decision.duration", metric.WithUnit("s"),
		metric.WithDescription("Time the rate limiter took to decide, the store call included."),
		metric.WithExplicitBucketBoundaries(defaultBuckets...))
	o.storeErrors, errs[2] = m.Int64Counter("ratelimit.store.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Failed rate-limit store calls, by kind (timeout, unavailable, breaker_open)."))
	o.breakerOpen, errs[3] = m.Int64UpDownCounter("ratelimit.breaker.open", metric.WithUnit("{breaker}"),
		metric.WithDescription("Open circuit breakers of the rate-limit stores: 1 while a store's breaker is open."))
	o.transitions, errs[4] = m.Int64Counter("ratelimit.breaker.transitions", metric.WithUnit("{transition}"),
		metric.WithDescription("Circuit breaker changes of the rate-limit stores, by the state changed to."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	for i, s := range sources {
		o.latency[i] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("source", s.String())))}
	}
	for i, k := range kinds {
		o.errors[i] = addOptions(attribute.String("kind", k))
	}
	o.opened = addOptions(attribute.String("to", "open"))
	o.closed = addOptions(attribute.String("to", "closed"))
	return o, nil
}

// observe reports the decisions counted so far: the callback of ratelimit.decisions.
func (o *Observer) observe(_ context.Context, obs metric.Int64Observer) error {
	for _, p := range *o.policies.Load() {
		p.observe(obs)
	}
	if p := o.other.Load(); p != nil {
		p.observe(obs)
	}
	return nil
}

// addOptions returns the options of a measurement with the attributes kvs.
func addOptions(kvs ...attribute.KeyValue) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
}

// Decided implements [ratelimit.Observer]: it records the decision's latency and counts each
// policy's verdict.
func (o *Observer) Decided(e ratelimit.DecisionEvent) {
	ctx := context.Background() // a decision has no request context
	s := sourceIndex(e.Source)
	if e.Latency > 0 { // 0: a store in this process, not timed
		o.duration.Record(ctx, e.Latency.Seconds(), o.latency[s]...)
	}
	known := *o.policies.Load()
	for _, r := range e.Results {
		p := known[r.Policy.Name]
		if p == nil {
			p = o.counts(r.Policy.Name, len(known))
		}
		if r.Allowed {
			p.n[s][1].Add(1)
		} else {
			p.n[s][0].Add(1)
		}
	}
}

// StoreFailed implements [ratelimit.Observer]: it counts the failure by kind.
func (o *Observer) StoreFailed(err error) {
	o.storeErrors.Add(context.Background(), 1, o.errors[kindOf(err)]...)
}

// BreakerChanged implements [ratelimit.Observer].
func (o *Observer) BreakerChanged(open bool) {
	ctx := context.Background()
	if open {
		o.breakerOpen.Add(ctx, 1)
		o.transitions.Add(ctx, 1, o.opened...)
	} else {
		o.breakerOpen.Add(ctx, -1)
		o.transitions.Add(ctx, 1, o.closed...)
	}
}

// counts returns the counts of a policy name that is not in the map of n known names: those
// of otherPolicy once the map is full, else new ones, published in the map.
func (o *Observer) counts(name string, n int) *policyCounts {
	if n >= maxPolicies {
		if p := o.other.Load(); p != nil {
			return p
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	known := *o.policies.Load()
	if p := known[name]; p != nil { // added by another goroutine meanwhile
		return p
	}
	if len(known) >= maxPolicies {
		if p := o.other.Load(); p != nil {
			return p
		}
		p := newCounts(otherPolicy)
		o.other.Store(p)
		return p
	}
	p := newCounts(name)
	next := make(map[string]*policyCounts, len(known)+1)
	for k, v := range known {
		next[k] = v
	}
	next[name] = p
	o.policies.Store(&next)
	return p
}

// newCounts returns the counts of the policy attribute, at zero.
func newCounts(policy string) *policyCounts {
	p := new(policyCounts)
	for i, s := range sources {
		for j, outcome := range [...]string{"denied", "allowed"} {
			set := attribute.NewSet(attribute.String("policy", policy), attribute.String("outcome", outcome),
				attribute.String("source", s.String()))
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

// sourceIndex returns the index of s in sources; a source this module does not know is
// recorded as the store's, which is what its String says.
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
