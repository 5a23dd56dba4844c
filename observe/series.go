package observe

import (
	"slices"
	"sync"
	"sync/atomic"
)

// buckets are the default upper bounds of Buckets.
var buckets = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
}

// Buckets returns the default upper bounds, in seconds, of a histogram of decision latency:
// 10 µs (a fast store on loopback) to 1 s (far beyond any store deadline).
func Buckets() []float64 { return slices.Clone(buckets) }

// MaxPolicies bounds the series of a [Policies] registry: the names beyond it share the
// label OtherPolicy, so that however many policies an application makes (one per tenant,
// say), a metrics module holds a bounded number of series.
const MaxPolicies = 256

// OtherPolicy is the label of the names beyond MaxPolicies. A policy name starts with a-z, so
// no policy has it.
const OtherPolicy = "_other"

// Policies maps policy names to a metrics module's series, made by New the first time a name
// is seen, for at most MaxPolicies names (the others share OtherPolicy's). Get takes no lock
// once a name is known: the map is never written once published, and adding a name publishes
// a copy. The zero value with New set is ready to use.
type Policies[T any] struct {
	New func(label string) *T

	known atomic.Pointer[map[string]*T]
	other atomic.Pointer[T]
	mu    sync.Mutex
}

// Get returns the series of the policy name.
func (p *Policies[T]) Get(name string) *T {
	if m := p.known.Load(); m != nil {
		if s := (*m)[name]; s != nil {
			return s
		}
		if len(*m) >= MaxPolicies {
			if s := p.other.Load(); s != nil {
				return s
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var known map[string]*T
	if m := p.known.Load(); m != nil {
		known = *m
	}
	if s := known[name]; s != nil { // added by another goroutine meanwhile
		return s
	}
	if len(known) >= MaxPolicies {
		if s := p.other.Load(); s != nil {
			return s
		}
		s := p.New(OtherPolicy)
		p.other.Store(s)
		return s
	}
	s := p.New(name)
	next := make(map[string]*T, len(known)+1)
	for k, v := range known {
		next[k] = v
	}
	next[name] = s
	p.known.Store(&next)
	return s
}

// Each calls f with the series of every label seen so far.
func (p *Policies[T]) Each(f func(*T)) {
	if m := p.known.Load(); m != nil {
		for _, s := range *m {
			f(s)
		}
	}
	if s := p.other.Load(); s != nil {
		f(s)
	}
}
