package ratelimit

import "time"

// Observer is told what the limiter decides and what goes wrong, to count it: the modules
// ratelimit/prometheus and ratelimit/otel implement it. Give it to a store with [WithObserver];
// every limiter and guard over that store reports to it.
//
// Its methods are called on the request path, from many goroutines at once: they must be safe
// for concurrent use, fast, and must not block.
type Observer interface {
	// Decided reports one decision of the limiter: by whom, how long it took, and every
	// policy's result, shadow policies included. A request checked by a guard is one decision
	// (more when it waits for an in-flight slot); a [Limiter] used directly reports its own.
	Decided(e DecisionEvent)
	// Answered reports one request a [Guard] checked, once, with the [Result] its client saw:
	// the figures to compare with the responses by status.
	Answered(e RequestEvent)
	// StoreFailed reports a failed store call. Its kind is found with errors.Is:
	// [ErrStoreTimeout], [ErrStoreUnavailable], or [ErrBreakerOpen] when the call was not made.
	StoreFailed(err error)
	// BreakerChanged reports the store's circuit breaker changing state, from one to another.
	BreakerChanged(from, to BreakerState)
	// MemoryStoreFull reports the memory store at its bound ([WithMaxKeys]) making room for a
	// new identity: by forgetting the least-used state, under half its capacity, of another
	// (overflow false), or, when every identity it holds has used more, by deciding the new
	// one on the shared overflow quota (overflow true). See [NewMemoryStore].
	MemoryStoreFull(overflow bool)
	// KeyFellBack reports a request for which the guard's key function found no key, and
	// which the guard limited by its client IP instead; reason is one of
	// [KeyFallbackReasons]. A guard also logs each reason once.
	KeyFellBack(reason string)
	// RedisEvictionPolicy reports the maxmemory-policy of the Redis servers a store writes to
	// (several, comma-separated, when they differ), read on the store's first check and again
	// every few minutes, when it changes; "" when it could not be read. evicts reports whether
	// Redis may evict the limiter's keys (any policy but noeviction), handing their identities
	// fresh quotas.
	RedisEvictionPolicy(policy string, evicts bool)
	// Leased reports a request starting to hold in-flight slots (held 0, acquired true) when
	// its guard admits it, and giving them back (acquired false) after its handler, having
	// held them for held: the figures of active leases and lease duration.
	Leased(acquired bool, held time.Duration)
	// Queued reports a request starting (entered true) or ending a wait: for an in-flight
	// slot ([WaitForSlot]) or for its slot under a shaping policy. Its time in the queue is
	// [RequestEvent.Waited].
	Queued(entered bool)
}

// RequestEvent is what an [Observer] is told of one request a guard answered. It is passed by
// value, so that reporting allocates nothing.
type RequestEvent struct {
	// Result is what the client got.
	Result Result
	// Waited is how long the guard held the request before it proceeded or was refused: its
	// wait for an in-flight slot ([WaitForSlot]) or for its slot under a shaping policy. 0 for
	// a request that did not wait.
	Waited time.Duration
}

// Result is what a guard answered one request, named from the client's side: each result is
// one kind of response (see [Outcome.Result]). Its String is the label the metrics modules use.
type Result uint8

const (
	// ResultAllowed: the store (or the denial cache) admitted the request; it proceeded with
	// rate-limit headers.
	ResultAllowed Result = iota
	// ResultDenied: the limiter denied the request; it was answered 429 (or the
	// WithDenyResponse or InFlightStatus status) with Retry-After.
	ResultDenied
	// ResultUnlimited: the store failed and the guard failed open without a local fallback:
	// the request proceeded without any limit, and without rate-limit headers.
	ResultUnlimited
	// ResultFallbackAllowed: the store failed and the local fallback ([WithFallback]) admitted
	// the request, under this instance's share of the limits.
	ResultFallbackAllowed
	// ResultFallbackDenied: the store failed and the local fallback denied the request (429).
	ResultFallbackDenied
	// ResultErrorDenied: the store failed and the guard failed closed ([FailClosed]): the
	// request was refused with the FailClosed status, whatever a local fallback decided.
	ResultErrorDenied
	// ResultRejected: the request was refused before any limit was checked: it carried no key
	// and the guard rejects such requests ([RejectMissingKey]), or its key or cost could not be
	// used (400).
	ResultRejected
	// ResultCanceled: the client went away while the guard waited (499).
	ResultCanceled
	// ResultSkipped: [WithSkip] exempted the request; it proceeded without rate-limit headers.
	ResultSkipped

	numResults = iota
)

// String returns the result's label: "allowed", "denied", "unlimited", "fallback_allowed",
// "fallback_denied", "error_denied", "rejected", "canceled" or "skipped".
func (r Result) String() string {
	if int(r) < len(resultNames) {
		return resultNames[r]
	}
	return "unknown"
}

var resultNames = [numResults]string{"allowed", "denied", "unlimited", "fallback_allowed",
	"fallback_denied", "error_denied", "rejected", "canceled", "skipped"}

// Results returns every result, in the order of their values: what a metrics module
// pre-creates its series from.
func Results() []Result {
	r := make([]Result, numResults)
	for i := range r {
		r[i] = Result(i)
	}
	return r
}

// BreakerState is the state of a store's circuit breaker (see [WithBreaker]).
type BreakerState uint8

const (
	// BreakerClosed: calls go to the store.
	BreakerClosed BreakerState = iota
	// BreakerOpen: calls fail at once with [ErrBreakerOpen].
	BreakerOpen
	// BreakerHalfOpen: one call at a time probes the store; the first that succeeds closes
	// the breaker, and a failure opens it again.
	BreakerHalfOpen
)

// String returns "closed", "open" or "half_open".
func (s BreakerState) String() string {
	switch s {
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half_open"
	}
	return "closed"
}

// DecisionEvent is what an [Observer] is told of one decision. It is passed by value, so that
// reporting allocates nothing.
type DecisionEvent struct {
	// Allowed reports whether the request was admitted.
	Allowed bool
	// Source is what decided.
	Source Source
	// Latency is how long the limiter took to decide, the store call included (the memory
	// store's too: reading the clock twice adds about 50 ns to its decision, paid only with an
	// observer).
	Latency time.Duration
	// Results are every policy's results, in the limiter's order, each with its Policy (see
	// Policy.Shadow). They are valid only during the call: copy what you keep.
	Results []PolicyResult
	// Store describes the store that was called, for the database attributes of a metric: nil
	// for a store that does not describe itself (one written outside this package, say).
	Store *StoreInfo
}

// StoreInfo describes a store, as the OpenTelemetry database conventions name a client's
// calls: the memory store is System "memory"; the Redis store is System "redis", its calls
// Operation "FCALL" of the function Procedure, to Server (host and port, when the client has one
// address: a single server or a Sentinel-managed one has its master's, a Cluster none).
type StoreInfo struct {
	System, Operation, Procedure string
	ServerAddress                string
	ServerPort                   int
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

// describedStore is the capability of a store that describes itself (see [StoreInfo]).
type describedStore interface{ info() *StoreInfo }

// infoOf returns the description of s, or nil.
func infoOf(s Store) *StoreInfo {
	if d, ok := capability[describedStore](s); ok {
		return d.info()
	}
	return nil
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
