// Package observe names what a rate limiter reports to its [ratelimit.Observer], and holds
// what a metrics module built on it needs: the labels of its series and a bounded registry of
// per-policy series.
//
// The names are the labels of the metrics modules (ratelimit/prometheus, ratelimit/otel), so
// a dashboard, an alert and a custom observer use the same words:
//
//   - [Result]: what a guard answered one request (allowed, denied, unlimited, ...);
//   - [Source]: what made a decision (the store, the denial cache, the local fallback, a quota lease);
//   - [BreakerState]: the state of a store's circuit breaker;
//   - [ErrorKind]: the kind of an error (unavailable, timeout, breaker_open, ...);
//   - [KeyFallbackReasons]: why a guard limited a request by a fallback (its client IP
//     instead of its key, a trusted proxy's address, the limiter's own policies);
//   - [Degradations]: the features a store runs without, falling back to a costlier way.
package observe
