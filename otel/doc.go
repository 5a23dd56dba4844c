// Package ratelimitotel records what a rate limiter decides, and what goes wrong, as
// OpenTelemetry metrics. It depends only on the OpenTelemetry metric API: the application
// chooses the SDK and the exporter.
//
// An [Observer] is a [ratelimit.Observer]. Make it from a MeterProvider, and give it to every
// store whose limiters and guards it should record:
//
//	metrics, err := ratelimitotel.New(otel.GetMeterProvider())
//	if err != nil { ... }
//	store := ratelimit.NewRedisStore(rdb, ratelimit.WithObserver(metrics))
//
// # Instruments
//
// The meter is named "github.com/a7d3e0dd/ratelimit/otel".
//
//	name                           instrument              unit          attributes
//	ratelimit.decisions            Int64ObservableCounter  {decision}    policy, outcome (allowed, denied), source (store, denial_cache, fallback)
//	ratelimit.decision.duration    Float64Histogram        s             source
//	ratelimit.store.errors         Int64Counter            {error}       kind (timeout, unavailable, breaker_open)
//	ratelimit.breaker.open         Int64UpDownCounter      {breaker}     (none)
//	ratelimit.breaker.transitions  Int64Counter            {transition}  to (open, closed)
//	ratelimit.rules.version        Int64ObservableGauge    {version}     version
//	ratelimit.rules.loads          Int64Counter            {load}        result (applied, rejected)
//
// ratelimit.decisions counts each policy's own verdict: a request checked against two
// policies adds one to each, outcome "denied" only for the policy that refused it (a request
// is denied when any policy denies it, and then no policy charged it). The rejection rate of a
// policy is thus its denied count over its total. Peeks ([ratelimit.Limiter.Peek]) and checks
// of cost 0 are decisions too, and are counted. The number of decisions over a store that does
// I/O (Redis), one per check whatever its policies, is the count of
// ratelimit.decision.duration: the memory store's decisions are not timed
// (ratelimit.DecisionEvent.Latency is 0), and not in the histogram.
//
// The policy attribute is the policy's Name, which comes from code or configuration and never
// from a request: the identity a request is limited by (its key) is never an attribute.
// Policies of one name, in different limiters, share their series. As a safeguard, names
// beyond the first 256 that one Observer sees are recorded as policy="_other", a value no
// policy can be named.
//
// ratelimit.decision.duration is how long the limiter took to decide, the store call
// included. Its instrument advises buckets from 10 µs to 1 s ([DefaultBuckets]); an SDK view
// can replace them.
//
// ratelimit.store.errors counts failed store calls by kind: "breaker_open" for a call the
// circuit breaker did not make ([ratelimit.ErrBreakerOpen]), "timeout"
// ([ratelimit.ErrStoreTimeout]), and "unavailable" for every other failure
// ([ratelimit.ErrStoreUnavailable]).
//
// ratelimit.breaker.open is the number of open circuit breakers among the stores that report
// to this Observer: 1 while the breaker of a single store is open, 0 when it is closed.
//
// The rules module's Engine reports to an Observer given to it with rules.WithReporter: the
// Observer has its RulesApplied and RulesRejected methods, and this module does not depend on
// the rules module. ratelimit.rules.version is 1, with one series: the version of the rules
// last applied, which a rules document names (at most 128 bytes, which the rules module
// checks). Its callback reports only that version, so the series of the version before goes.
// An Observer given to several engines reports the version that any of them applied last.
// Before any is applied, the gauge has no series. ratelimit.rules.loads counts the documents
// applied and those rejected (invalid or unreadable: the last good rules stay in use, and the
// version reported stays); both series are reported from the start, at 0.
//
// Exported to Prometheus by the OpenTelemetry Prometheus exporter, the instruments take the
// names and labels of package ratelimitprom (ratelimit_decisions_total,
// ratelimit_decision_duration_seconds, ...), so the alerting rules of
// ratelimit/prometheus/alerts.yml apply to them too. One name differs: ratelimit.rules.version
// becomes ratelimit_rules_version, where ratelimitprom has ratelimit_rules_version_info.
//
// # Cost
//
// ratelimit.decisions is an asynchronous counter: Decided adds to an atomic count of the
// policy, source and outcome, and the SDK reads the counts when it collects. Each policy
// reports its six series (three sources, two outcomes) from its first decision on, at zero
// until counted. The counts and attribute sets of a policy are made when it is first seen, and
// looked up in a map that is only read on the request path.
//
// Decided then records one histogram value, with context.Background(): a decision carries no
// request context, so no exemplar links it to a trace. That recording is most of what Decided
// costs, and it is the SDK's; the SDK of this module's tests allocates nothing for it.
package ratelimitotel
