package ratelimit

import "time"

// Observer is told what the limiter decides and what goes wrong, to count it: the modules
// ratelimit/prometheus and ratelimit/otel implement it. Give it to a store with [WithObserver];
// every limiter and guard over that store reports to it.
//
// Its methods are called on the request path, from many goroutines at once: they must be safe
// for concurrent use, fast, and must not block.
type Observer interface {
	// Decided reports one decision: by whom, how long it took, and every policy's result,
	// shadow policies included.
	Decided(e DecisionEvent)
	// StoreFailed reports a failed store call. Its kind is found with errors.Is:
	// [ErrStoreTimeout], [ErrStoreUnavailable], or [ErrBreakerOpen] when the call was not made.
	StoreFailed(err error)
	// BreakerChanged reports the store's circuit breaker opening (open) or closing again.
	BreakerChanged(open bool)
}

// DecisionEvent is what an [Observer] is told of one decision. It is passed by value, so that
// reporting allocates nothing.
type DecisionEvent struct {
	// Allowed reports whether the request was admitted.
	Allowed bool
	// Source is what decided.
	Source Source
	// Latency is how long the limiter took to decide, the store call included. It is 0 for a
	// store that answers in this process (the memory store): such a decision takes well under
	// a microsecond, and reading the clock twice would add a tenth to it.
	Latency time.Duration
	// Results are every policy's results, in the limiter's order, each with its Policy (see
	// Policy.Shadow). They are valid only during the call: copy what you keep.
	Results []PolicyResult
}

// Source is what made a decision: the store, or, when the store could not be asked, a layer
// in front of it (see [WithDenialCache] and [WithFallback]).
type Source uint8

const (
	// SourceStore is a decision of the store.
	SourceStore Source = iota
	// SourceDenialCache is a denial answered from the denial cache: the store denied the
	// identity until a time not yet reached.
	SourceDenialCache
	// SourceFallback is a decision of the local fallback, made while the store was
	// unavailable.
	SourceFallback
)

// String returns "store", "denial_cache" or "fallback": the label the metrics modules use.
func (s Source) String() string {
	switch s {
	case SourceDenialCache:
		return "denial_cache"
	case SourceFallback:
		return "fallback"
	}
	return "store"
}

// observedStore is the capability of a store that has an Observer (see [Store]).
type observedStore interface{ Observer() Observer }

// observerOf returns the observer of s, or nil.
func observerOf(s Store) Observer {
	if o, ok := capability[observedStore](s); ok {
		return o.Observer()
	}
	return nil
}
