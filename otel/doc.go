// Package ratelimitotel records what a rate limiter decides, and what goes wrong, as
// OpenTelemetry metrics. It depends only on the OpenTelemetry metric API: the application
// chooses the SDK and the exporter.
//
// Make an [Observer] from a MeterProvider, and give its hooks ([Observer.Hooks], a
// [ratelimit.Observer]) to every store whose limiters and guards it should record:
//
//	metrics, err := ratelimitotel.New(otel.GetMeterProvider())
//	if err != nil { ... }
//	store := ratelimit.NewRedisStore(rdb, ratelimit.WithObserver(metrics.Hooks()))
//
// # Instruments
//
// The meter is named "github.com/a7d3e0dd/ratelimit/otel". The names follow the OpenTelemetry
// semantic conventions: instruments and attributes of the library are namespaced "ratelimit.",
// shaped after ASP.NET Core's aspnetcore.rate_limiting.* instruments (requests by result,
// active leases and lease duration, which are in-flight slot holders and hold duration here,
// queued requests, time in queue); an error's kind is
// error.type; Redis calls are database client calls with the stable db.* attributes.
//
//	name                                   instrument              unit          attributes
//	ratelimit.requests                     Int64Counter            {request}     ratelimit.result
//	ratelimit.policy.decisions             Int64ObservableCounter  {decision}    ratelimit.policy, ratelimit.decision (allowed, denied), ratelimit.source (store, denial_cache, fallback, lease), ratelimit.policy.shadow (bool)
//	ratelimit.decision.duration            Float64Histogram        s             ratelimit.source
//	db.client.operation.duration           Float64Histogram        s             db.system.name (redis), db.operation.name (FCALL), db.stored_procedure.name, server.address, server.port
//	ratelimit.store.errors                 Int64Counter            {error}       error.type (unavailable, timeout, busy, oom, readonly, script, other, breaker_open)
//	ratelimit.breaker.open                 Int64UpDownCounter      {breaker}     (none)
//	ratelimit.breaker.transitions          Int64Counter            {transition}  ratelimit.breaker.state (open, half_open, closed)
//	ratelimit.denial_cache.deaf            Int64UpDownCounter      {cache}       (none)
//	ratelimit.store.degraded               Int64UpDownCounter      {store}       ratelimit.store.feature (merged_checks, compact_expiry, denial_cache, functions, quota_leases)
//	ratelimit.inflight_slot.holders        Int64UpDownCounter      {request}     (none)
//	ratelimit.inflight_slot.hold.duration  Float64Histogram        s             (none)
//	ratelimit.active_request_leases        Int64UpDownCounter      {request}     (none; deprecated: use ratelimit.inflight_slot.holders)
//	ratelimit.request_lease.duration       Float64Histogram        s             (none; deprecated: use ratelimit.inflight_slot.hold.duration)
//	ratelimit.queued_requests              Int64UpDownCounter      {request}     (none)
//	ratelimit.hold.outstanding             Int64UpDownCounter      {hold}        (none)
//	ratelimit.hold.units                   Int64UpDownCounter      {unit}        (none)
//	ratelimit.hold.settles                 Int64Counter            {settle}      ratelimit.hold.expired (bool)
//	ratelimit.hold.settled_units           Int64Counter            {unit}        (none)
//	ratelimit.hold.estimate_error          Int64Histogram          {unit}        ratelimit.hold.error_direction (over, under)
//	ratelimit.request.time_in_queue        Float64Histogram        s             ratelimit.result
//	ratelimit.memory_store.full            Int64Counter            {identity}    ratelimit.memory_store.action (evicted, overflow)
//	ratelimit.key.fallbacks                Int64Counter            {request}     ratelimit.key.fallback_reason (no_header, no_user, no_route, no_key, no_proxy_header, resolver_failed)
//	ratelimit.redis.evictable              Int64ObservableGauge    1             ratelimit.redis.maxmemory_policy
//	ratelimit.rules.version                Int64ObservableGauge    {version}     ratelimit.rules.version
//	ratelimit.rules.loads                  Int64Counter            {load}        ratelimit.rules.result (applied, rejected)
//	ratelimit.rules.empty                  Int64ObservableGauge    1             (none)
//
// ratelimit.requests counts each request a guard answered once, by the result its client saw
// (observe.Result: allowed, denied, unlimited, fallback_allowed, fallback_denied,
// error_denied, rejected, canceled, skipped, allowlisted, denylisted), so it equals the responses by status.
//
// ratelimit.policy.decisions counts each policy's own verdict: a request checked against two
// policies adds one to each, ratelimit.decision "denied" only for the policy that refused it
// (a request is denied when any policy denies it, and then no policy charged it). The
// rejection rate of a policy is thus its denied count over its total. Peeks
// ([ratelimit.Limiter.Peek]) and checks of cost 0 are decisions too, and are counted. A
// shadow policy's verdicts (ratelimit.Policy.Shadow) carry ratelimit.policy.shadow true: its
// denials refused no client, so a rejection rate of what clients met leaves them out.
//
// The ratelimit.policy attribute is the policy's Name, which comes from code or configuration
// and never from a request: the identity a request is limited by (its key) is never an
// attribute. Policies of one name, in different limiters, share their series. As a safeguard,
// names beyond the first 256 enforced and the first 256 shadow policies that one Observer
// sees are recorded as "_other" (with their ratelimit.policy.shadow), a value no policy can be
// named.
//
// ratelimit.inflight_slot.holders is the number of requests holding in-flight slots
// (algorithms.InFlight) now, and ratelimit.inflight_slot.hold.duration how long each held
// them, in buckets from 1 ms to 5 minutes. Their names before, ratelimit.active_request_leases
// and ratelimit.request_lease.duration, are recorded too, with the same values, for one
// release: they are deprecated, and go in the next.
//
// The ratelimit.hold.* instruments record the holds of requests whose cost is known only after
// they ran (ratelimit.ChargeAfter, ratelimit.Limiter.Reserve; see docs/costs.md), in the units
// of their limits (tokens, bytes). ratelimit.hold.outstanding is the number of holds taken on
// this instance and not yet settled, and ratelimit.hold.units the estimates they hold (a hold
// that expired counts until its request settles). ratelimit.hold.settles counts the settles,
// ratelimit.hold.expired true for a hold that had outlived its lifetime and been given back
// (its whole actual charged); ratelimit.hold.settled_units what they charged. The estimate
// error, actual − estimate, is negative for a request that cost less than its estimate: as a
// histogram's values are to be non-negative (the SDK reports their sum, which a mix of signs
// would cancel), ratelimit.hold.estimate_error records its distance, by
// ratelimit.hold.error_direction: over (an overdraft) or under (the estimate or less; an exact
// one in the bucket of 0). Its instrument advises buckets from 0 to 10 million in steps of about 3.
//
// ratelimit.decision.duration is how long the limiter took to decide, the store call
// included, on every store (the memory store's too). Its instrument advises buckets from
// 10 µs to 1 s ([DefaultBuckets]); an SDK view can replace them. db.client.operation.duration
// records the same time for the decisions a Redis store made, with the call's database
// attributes (server.address and server.port when the client has one address).
//
// ratelimit.breaker.open is the number of circuit breakers that are not closed among the
// stores that report to this Observer: 1 while the breaker of a single store is open or
// half-open, 0 when it is closed.
//
// ratelimit.denial_cache.deaf is the number of Redis stores, among those that report to this
// Observer, whose denial cache does not hear the refunds and resets the fleet announces (see
// ratelimit.WithDenialCache): each is counted from when it starts listening until it is
// subscribed, and while its subscription is broken. Such a cache takes no new denial, so its
// denied identities cost Redis calls again; nothing is admitted that should not be.
//
// ratelimit.store.degraded is the number of stores, among those that report to this Observer,
// that run without a feature they were made with, by ratelimit.store.feature (see
// observe.Degradations): merged_checks (the server refused a merged call of concurrent checks,
// so they go one call each), compact_expiry (compact state on a server before Redis 7.0: TATs
// in values), denial_cache (a client that cannot hear every server: no denial cache),
// functions (the server refused FCALL: checks run as scripts, at about twice the Redis time), quota_leases (the
// quota leases track as many identities as they may: new ones go to Redis; it ends a minute
// after the last one turned away).
// Each decides the same and costs Redis more; every feature's series is reported from the start,
// at 0.
//
// The rules module's Engine reports to an Observer given to it with rules.WithReporter: the
// Observer has its RulesApplied, RulesRejected and RulesEmpty methods, and this module does not
// depend on the rules module. ratelimit.rules.version is 1, with one series: the version of the rules
// last applied, which a rules document names (at most 128 bytes, which the rules module
// checks). Its callback reports only that version, so the series of the version before goes.
// Before any is applied, the gauge has no series. ratelimit.rules.loads counts the documents
// applied and those rejected; both series are reported from the start, at 0.
// ratelimit.rules.empty (RulesEmpty, of the rules module's EmptyReporter) is 1 while the rules
// last applied are none, a document of allow_empty: true that limits no request; else 0,
// from the start.
//
// # Spans
//
// The library makes no spans. A request it refuses is answered 429 by the middleware; an
// HTTP server span around it (otelhttp, say) records http.response.status_code 429 and, as
// the HTTP semantic conventions have a server span's status left unset for 4xx, not an error.
// A 503 of a fail-closed route is a 5xx, which those conventions do mark as an error.
//
// # Prometheus
//
// Exported by the OpenTelemetry Prometheus exporter, the instruments take names derived from
// these (dots become underscores, counters end in _total, durations in _seconds) and their
// attributes labels named the same way (ratelimit.result becomes ratelimit_result). Package
// ratelimitprom exports the same figures under shorter label names:
//
//	OpenTelemetry                                    ratelimitprom
//	ratelimit.requests {ratelimit.result}            ratelimit_requests_total {result}
//	ratelimit.policy.decisions {ratelimit.policy, ratelimit.decision, ratelimit.source, ratelimit.policy.shadow}
//	                                                 ratelimit_decisions_total {policy, outcome, source, shadow}
//	ratelimit.decision.duration {ratelimit.source}   ratelimit_decision_duration_seconds {source}
//	db.client.operation.duration                     (none: ratelimit_decision_duration_seconds{source="store"})
//	ratelimit.store.errors {error.type}              ratelimit_store_errors_total {kind}
//	ratelimit.breaker.open                           ratelimit_breaker_open
//	ratelimit.breaker.transitions {ratelimit.breaker.state}
//	                                                 ratelimit_breaker_transitions_total {to}
//	ratelimit.denial_cache.deaf                      ratelimit_denial_caches_deaf
//	ratelimit.store.degraded {ratelimit.store.feature}
//	                                                 ratelimit_stores_degraded {feature}
//	ratelimit.inflight_slot.holders                  ratelimit_inflight_slot_holders
//	ratelimit.inflight_slot.hold.duration            ratelimit_inflight_slot_hold_duration_seconds
//	ratelimit.active_request_leases (deprecated)     ratelimit_active_request_leases (deprecated)
//	ratelimit.request_lease.duration (deprecated)    ratelimit_request_lease_duration_seconds (deprecated)
//	ratelimit.queued_requests                        ratelimit_queued_requests
//	ratelimit.hold.outstanding                       ratelimit_holds_outstanding
//	ratelimit.hold.units                             ratelimit_held_units
//	ratelimit.hold.settles {ratelimit.hold.expired}  ratelimit_hold_settles_total {expired}
//	ratelimit.hold.settled_units                     ratelimit_settled_units_total
//	ratelimit.hold.estimate_error {ratelimit.hold.error_direction}
//	                                                 ratelimit_hold_estimate_error {direction}
//	ratelimit.request.time_in_queue {ratelimit.result}
//	                                                 ratelimit_request_time_in_queue_seconds {result}
//	ratelimit.memory_store.full {ratelimit.memory_store.action}
//	                                                 ratelimit_memory_store_full_total {how}
//	ratelimit.key.fallbacks {ratelimit.key.fallback_reason}
//	                                                 ratelimit_key_fallbacks_total {reason}
//	ratelimit.redis.evictable {ratelimit.redis.maxmemory_policy}
//	                                                 ratelimit_redis_evictable {policy}
//	ratelimit.rules.version {ratelimit.rules.version}
//	                                                 ratelimit_rules_version_info {version}
//	ratelimit.rules.loads {ratelimit.rules.result}   ratelimit_rules_loads_total {result}
//	ratelimit.rules.empty                            ratelimit_rules_empty
//
// The alerting rules of ratelimit/prometheus/alerts.yml use ratelimitprom's names.
//
// # Cost
//
// ratelimit.policy.decisions is an asynchronous counter: the Decided hook adds to an atomic count of the
// policy, source and outcome, and the SDK reads the counts when it collects. Each policy
// reports its eight series (four sources, two outcomes) from its first decision on, at zero
// until counted. The counts and attribute sets of a policy are made when it is first seen, and
// looked up in a map that is only read on the request path.
//
// Decided then records one histogram value, with context.Background(): a decision carries no
// request context, so no exemplar links it to a trace. That recording is most of what the
// hook costs, and it is the SDK's; the SDK of this module's tests allocates nothing for it.
package ratelimitotel
