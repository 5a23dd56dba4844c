// Package ratelimitprom counts what a rate limiter decides, and what goes wrong, as Prometheus
// metrics (client_golang).
//
// An [Observer] is a [prometheus.Collector], and its hooks ([Observer.Hooks]) are a
// [ratelimit.Observer]. Register it once, and give its hooks to every store whose limiters and
// guards it should count:
//
//	metrics := ratelimitprom.New()
//	prometheus.MustRegister(metrics)
//	store := ratelimit.NewRedisStore(rdb, ratelimit.WithObserver(metrics.Hooks()))
//
// # Metrics
//
//	name                                           type       labels
//	ratelimit_requests_total                       counter    result (allowed, denied, unlimited, fallback_allowed, fallback_denied, error_denied, rejected, canceled, skipped, allowlisted, denylisted)
//	ratelimit_decisions_total                      counter    policy, outcome (allowed, denied), source (store, denial_cache, fallback, lease), shadow (true, false)
//	ratelimit_decision_duration_seconds            histogram  source
//	ratelimit_store_errors_total                   counter    kind (unavailable, timeout, breaker_open, busy, oom, readonly, script, other)
//	ratelimit_breaker_open                         gauge      (none)
//	ratelimit_breaker_transitions_total            counter    to (open, half_open, closed)
//	ratelimit_denial_caches_deaf                   gauge      (none)
//	ratelimit_stores_degraded                      gauge      feature (merged_checks, compact_expiry, denial_cache, functions, quota_leases)
//	ratelimit_inflight_slot_holders                gauge      (none)
//	ratelimit_inflight_slot_hold_duration_seconds  histogram  (none)
//	ratelimit_active_request_leases                gauge      (none; deprecated: use ratelimit_inflight_slot_holders)
//	ratelimit_request_lease_duration_seconds       histogram  (none; deprecated: use ratelimit_inflight_slot_hold_duration_seconds)
//	ratelimit_queued_requests                      gauge      (none)
//	ratelimit_request_time_in_queue_seconds        histogram  result
//	ratelimit_holds_outstanding                    gauge      (none)
//	ratelimit_held_units                           gauge      (none)
//	ratelimit_hold_settles_total                   counter    expired (true, false)
//	ratelimit_settled_units_total                  counter    (none)
//	ratelimit_hold_estimate_error                  histogram  direction (over, under)
//	ratelimit_memory_store_full_total              counter    how (evicted, overflow)
//	ratelimit_key_fallbacks_total                  counter    reason (no_header, no_user, no_route, no_key, no_proxy_header, resolver_failed)
//	ratelimit_redis_evictable                      gauge      policy (the maxmemory-policy, or unknown)
//	ratelimit_rules_version_info                   gauge      version
//	ratelimit_rules_loads_total                    counter    result (applied, rejected)
//	ratelimit_rules_empty                          gauge      (none)
//
// ratelimit_decisions_total counts each policy's own verdict: a request checked against two
// policies adds one to each, outcome "denied" only for the policy that refused it (a request
// is denied when any policy denies it, and then no policy charged it). The rejection rate of a
// policy is thus its denied count over its total. Peeks ([ratelimit.Limiter.Peek]) and checks
// of cost 0 are decisions too, and are counted. A shadow policy's verdicts
// (ratelimit.Policy.Shadow) carry shadow="true": its denials refused no client, so a
// rejection rate of what clients met selects shadow!="true" (alerts.yml does: it keeps the
// series of an instance of a release before the label, which has none). The number of
// decisions over a store that does
// I/O (Redis), one per check whatever its policies, is ratelimit_decision_duration_seconds_count;
// the memory store's decisions are timed too (ratelimit.DecisionEvent.Latency), and in the
// histogram.
//
// The policy label is the policy's Name, which comes from code or configuration and never
// from a request: the identity a request is limited by (its key) is never a label. Policies
// of one name, in different limiters, share their series. As a safeguard, names beyond the
// first 256 enforced and the first 256 shadow policies that one Observer sees are counted
// under policy="_other" (with their shadow label), a value no policy can be named.
//
// ratelimit_inflight_slot_holders is the number of requests holding in-flight slots
// (algorithms.InFlight) now, and ratelimit_inflight_slot_hold_duration_seconds how long each
// held them, in buckets from 1 ms to 5 minutes. Their names before,
// ratelimit_active_request_leases and ratelimit_request_lease_duration_seconds, are exported
// too, with the same values, for one release: they are deprecated, and go in the next.
//
// The ratelimit_hold* metrics count the holds of requests whose cost is known only after they
// ran (ratelimit.ChargeAfter, ratelimit.Limiter.Reserve; see docs/costs.md), in the units of
// their limits (tokens, bytes). ratelimit_holds_outstanding is the number of holds taken on this
// instance and not yet settled, and ratelimit_held_units the estimates they hold (a hold that
// expired counts until its request settles). ratelimit_hold_settles_total counts the settles,
// expired="true" for a hold that had outlived its lifetime and been given back (its whole
// actual charged); ratelimit_settled_units_total what they charged. The estimate error,
// actual − estimate, is negative for a request that cost less than its estimate: so that its
// _sum does not cancel overdrafts against give-backs, and as the OpenTelemetry module's
// histograms take no negative values, ratelimit_hold_estimate_error observes its distance, by
// direction: over (an overdraft) or under (the estimate or less; an exact one in le="0"), in
// buckets from 0 to 10 million in steps of about 3.
//
// ratelimit_decision_duration_seconds is how long the limiter took to decide, the store call
// included, in buckets from 10 µs to 1 s (see [WithBuckets]).
//
// ratelimit_store_errors_total counts failed store calls by kind, as observe.ErrorKind names
// them: "unavailable", "timeout", "breaker_open" (a call the circuit breaker did not make),
// "busy", "oom", "readonly", "script", "other" (see observe.ErrorKinds).
//
// ratelimit_breaker_open is the number of circuit breakers that are not closed among the
// stores that report to this Observer: 1 while the breaker of a single store is open or
// half-open, 0 when it is closed.
//
// ratelimit_stores_degraded is the number of stores, among those that report to this Observer,
// that run without a feature they were made with, by feature (see observe.Degradations):
// merged_checks (the server refused a merged call of concurrent checks, so they go one call
// each), compact_expiry (compact state on a server before Redis 7.0: TATs in values),
// denial_cache (a client that cannot hear every server: no denial cache), functions (the
// server refused FCALL: checks run as scripts, at about twice the Redis time), quota_leases (the
// quota leases track as many identities as they may: new ones go to Redis; it ends a minute
// after the last one turned away). Each decides the
// same and costs Redis more; every feature's series is exported from the start, at 0.
//
// The rules module's Engine reports to an Observer given to it with rules.WithReporter: the
// Observer has its RulesApplied, RulesRejected and RulesEmpty methods, and this module does not
// depend on the rules module. ratelimit_rules_version_info is 1, and has one series: the version of the
// rules last applied, which a rules document names (at most 128 bytes, which the rules module
// checks). When a version is applied, the series of the version before goes. An Observer
// given to several engines shows the version that any of them applied last. Before any is
// applied, the gauge has no series. ratelimit_rules_loads_total counts the documents applied
// and those rejected (invalid or unreadable: the last good rules stay in use, and the version
// shown stays). ratelimit_rules_empty is 1 while the rules last applied are none, a document
// of allow_empty: true that limits no request (the rules module's EmptyReporter); else 0.
//
// Every label value but the policy's and the version is known in advance, so the series are
// few and fixed: eight per policy for the decisions (four sources, two outcomes, the shadow
// label the policy's own), and New
// creates every other series but the version's and the eviction gauge's, one per value listed
// above (the durations one histogram per source, the errors one counter per kind).
// To prefix the names or add constant labels, register the Observer through
// [prometheus.WrapRegistererWithPrefix] or [prometheus.WrapRegistererWith].
//
// # Cost
//
// The Decided hook allocates nothing once a policy has been seen: the counters of every
// policy, source and outcome are resolved when the policy is first seen, and looked up in a
// map that is only read on the request path. It costs one histogram observation and one
// counter increment per policy.
//
// The file alerts.yml next to this package holds example Prometheus alerting rules over these
// metrics: a high rejection rate, a slow store, an open breaker, the fallback in use, store
// errors, rules rejected, no rules in use.
package ratelimitprom
