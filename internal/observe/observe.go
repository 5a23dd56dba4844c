// Package observe is what the metrics modules (ratelimit/prometheus, ratelimit/otel) share:
// the latency buckets, the decision sources and store-error kinds as labels, and the bounded
// registry of per-policy series that Decided reads without a lock.
package observe

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/a7d3e0dd/ratelimit"
)

// Buckets are the default upper bounds, in seconds, of the decision latency: 10 µs (a fast
// store on loopback) to 1 s (far beyond any store deadline). Do not modify: clone it.
var Buckets = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
}

// Sources are the decision sources, indexed by their value; the label of each is its String.
var Sources = [...]ratelimit.Source{ratelimit.SourceStore, ratelimit.SourceDenialCache, ratelimit.SourceFallback}

// SourceIndex returns the index of s in Sources; a source this package does not know counts
// as the store's, which is what its String says.
func SourceIndex(s ratelimit.Source) int {
	if int(s) < len(Sources) {
		return int(s)
	}
	return 0
}

// Store-error kinds, the indexes of Kinds.
const (
	KindTimeout = iota
	KindUnavailable
	KindBreakerOpen
	KindBusy
	KindOOM
	KindReadOnly
	KindScript
	KindOther
)

// Kinds are the labels of the store-error kinds: ratelimit.ErrorKind's, and breaker_open for a
// call the breaker did not make.
var Kinds = [...]string{KindTimeout: "timeout", KindUnavailable: "unavailable", KindBreakerOpen: "breaker_open",
	KindBusy: "busy", KindOOM: "oom", KindReadOnly: "readonly", KindScript: "script", KindOther: "other"}

// KindOf returns the kind of a store error. A call the breaker did not make is also of kind
// unavailable, so ErrBreakerOpen is asked first.
func KindOf(err error) int {
	if errors.Is(err, ratelimit.ErrBreakerOpen) {
		return KindBreakerOpen
	}
	label := ratelimit.ErrorKind(err)
	for i, k := range Kinds {
		if k == label {
			return i
		}
	}
	return KindOther
}

// MaxPolicies bounds the policy label: the names beyond it share the label OtherPolicy.
const MaxPolicies = 256

// OtherPolicy is the label of the names beyond MaxPolicies. A policy name starts with a-z, so
// no policy has it.
const OtherPolicy = "_other"

// Policies maps policy names to their series, made by New the first time a name is seen, for
// at most MaxPolicies names (the others share OtherPolicy's). Get takes no lock once a name is
// known: the map is never written once published, and adding a name publishes a copy.
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
