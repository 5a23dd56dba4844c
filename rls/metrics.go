package rls

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit/observe"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultNearLimitRatio is envoyproxy/ratelimit's NEAR_LIMIT_RATIO: a hit is near its limit
// when it takes the count above this share of the limit.
const DefaultNearLimitRatio = 0.8

// MaxStatSeries bounds the series of the reference's per-descriptor metrics (one per domain
// and first keys, which values can be part of, with detailed_metric, value_to_metric or a
// request-supplied limit): past it, the hits of a new series are counted in its domain's
// series of key1 "_other".
const MaxStatSeries = 10000

// Metrics counts what a [Server] answers, as Prometheus metrics: under envoyproxy/ratelimit's
// names (those its USE_PROMETHEUS exporter gives its stats, so that its dashboards work) and
// under this server's own, ratelimit_rls_*. It is a prometheus.Collector: register it
// (prometheus.MustRegister(m), or on a registry of your own) and give it to one server with
// [WithMetrics]. The package README lists the metrics.
//
// It is an unchecked collector (its Describe sends nothing): the reference's per-descriptor
// families hold series of two label sets (domain and key1, or domain, key1 and key2), as its
// exporter's do, which a described collector cannot.
type Metrics struct {
	nearRatio float32
	server    atomic.Pointer[Server]

	mu     sync.Mutex
	series map[[3]string]*statSeries // by domain, key1, key2 ("\x00" for none)

	// The reference's service-wide metrics.
	totalRequests, globalShadow, loadSuccess, loadError prometheus.Counter
	responseTime                                        prometheus.Histogram
	callErrors                                          *prometheus.CounterVec

	// This server's.
	calls, statuses, storeFailures, failAnswers *prometheus.CounterVec
	breakerDesc, servingDesc                    *prometheus.Desc
	// The series of calls and statuses answered OK and OVER_LIMIT, by the code's number: no
	// lookup of their labels on every call.
	callsByCode, statusesByCode [3]prometheus.Counter
}

// statSeries are the counts of one series of the reference's per-descriptor metrics.
type statSeries struct {
	labels                                 []string
	total, over, near, within, shadowCount atomic.Uint64
}

// The reference's per-descriptor metrics, in statSeries' order.
var statNames = [...]string{"total_hits", "over_limit", "near_limit", "within_limit", "shadow_mode"}

var statHelp = [...]string{
	"Hits of the descriptors of a rate limit (envoyproxy/ratelimit's total_hits).",
	"Hits over their limit (envoyproxy/ratelimit's over_limit).",
	"Hits within their limit above NEAR_LIMIT_RATIO of it, or over it from below (envoyproxy/ratelimit's near_limit).",
	"Hits within their limit (envoyproxy/ratelimit's within_limit).",
	"Hits over the limit of a rule in shadow_mode, answered OK (envoyproxy/ratelimit's shadow_mode).",
}

// statDescs are the descriptors of the per-descriptor metrics: for each name, of two and of
// three labels.
var statDescs = func() (d [len(statNames)][2]*prometheus.Desc) {
	for i, n := range statNames {
		name := "ratelimit_service_rate_limit_" + n
		d[i][0] = prometheus.NewDesc(name, statHelp[i], []string{"domain", "key1"}, nil)
		d[i][1] = prometheus.NewDesc(name, statHelp[i], []string{"domain", "key1", "key2"}, nil)
	}
	return d
}()

// MetricsOption configures [NewMetrics].
type MetricsOption func(*Metrics) error

// WithNearLimitRatio sets the share of a limit above which a hit is near it
// (DefaultNearLimitRatio, the reference's NEAR_LIMIT_RATIO, by default), in (0, 1].
func WithNearLimitRatio(r float64) MetricsOption {
	return func(m *Metrics) error {
		if !(r > 0 && r <= 1) {
			return errors.New("rls: WithNearLimitRatio: a ratio in (0, 1]")
		}
		m.nearRatio = float32(r)
		return nil
	}
}

// NewMetrics returns the metrics of one server, all at zero.
func NewMetrics(opts ...MetricsOption) (*Metrics, error) {
	m := &Metrics{nearRatio: DefaultNearLimitRatio, series: map[[3]string]*statSeries{}}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("rls: NewMetrics: an option is nil")
		}
		if err := o(m); err != nil {
			return nil, err
		}
	}
	method := prometheus.Labels{"grpc_method": "ShouldRateLimit"}
	m.totalRequests = prometheus.NewCounter(prometheus.CounterOpts{Name: "ratelimit_service_total_requests",
		Help: "Calls of the gRPC method (envoyproxy/ratelimit's ratelimit_server.<method>.total_requests).", ConstLabels: method})
	m.responseTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ratelimit_service_response_time_seconds",
		Help: "How long the calls of the gRPC method took (envoyproxy/ratelimit's ratelimit_server.<method>.response_time).", ConstLabels: method})
	m.callErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ratelimit_service_should_rate_limit_error",
		Help: "Calls answered with an error: redis_error, the store could not decide and the fail mode is error; service_error, a request refused (envoyproxy/ratelimit's call.should_rate_limit.*)."},
		[]string{"err_type"})
	m.globalShadow = prometheus.NewCounter(prometheus.CounterOpts{Name: "ratelimit_service_global_shadow_mode",
		Help: "Calls over the limit answered OK by the global shadow mode (envoyproxy/ratelimit's global_shadow_mode)."})
	m.loadSuccess = prometheus.NewCounter(prometheus.CounterOpts{Name: "ratelimit_service_config_load_success",
		Help: "Configurations put in force, the first included (envoyproxy/ratelimit's config_load_success)."})
	m.loadError = prometheus.NewCounter(prometheus.CounterOpts{Name: "ratelimit_service_config_load_error",
		Help: "Configurations refused on reload (envoyproxy/ratelimit's config_load_error)."})

	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ratelimit_rls_calls_total",
		Help: "ShouldRateLimit calls by what they were answered: the overall code (OK, OVER_LIMIT), or the gRPC code of an error (InvalidArgument, Unavailable, ...)."},
		[]string{"code"})
	m.statuses = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ratelimit_rls_statuses_total",
		Help: "Descriptor statuses answered, by code (OK, OVER_LIMIT)."}, []string{"code"})
	m.storeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ratelimit_rls_store_failures_total",
		Help: "Descriptors the store could not decide, by the kind of failure (breaker_open: the breaker did not call the store)."},
		[]string{"kind"})
	m.failAnswers = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ratelimit_rls_fail_mode_answers_total",
		Help: "Answers of the fail mode: calls answered Unavailable (mode error), descriptor statuses answered OK (allow) or OVER_LIMIT (deny)."},
		[]string{"mode"})
	m.breakerDesc = prometheus.NewDesc("ratelimit_rls_store_breaker",
		"1 for the state the store's circuit breaker is in (closed, open, half_open), 0 for the others.", []string{"state"}, nil)
	m.servingDesc = prometheus.NewDesc("ratelimit_rls_serving",
		"1 while the server reports itself healthy (gRPC health SERVING, /healthcheck 200), else 0.", nil, nil)
	for _, code := range []string{"OK", "OVER_LIMIT", codes.InvalidArgument.String(), codes.Unavailable.String()} {
		m.calls.WithLabelValues(code) // the usual answers' series, from the start
	}
	for _, code := range []rlsv3.RateLimitResponse_Code{rlsv3.RateLimitResponse_OK, rlsv3.RateLimitResponse_OVER_LIMIT} {
		m.callsByCode[code] = m.calls.WithLabelValues(code.String())
		m.statusesByCode[code] = m.statuses.WithLabelValues(code.String())
	}
	for _, k := range observe.ErrorKinds() {
		m.storeFailures.WithLabelValues(k)
	}
	for _, f := range failModes {
		m.failAnswers.WithLabelValues(f.String())
	}
	m.callErrors.WithLabelValues("redis_error")
	m.callErrors.WithLabelValues("service_error")
	return m, nil
}

// Describe sends nothing: Metrics is an unchecked collector (see [Metrics]).
func (m *Metrics) Describe(chan<- *prometheus.Desc) {}

// Collect sends every metric.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range []prometheus.Collector{m.totalRequests, m.responseTime, m.callErrors, m.globalShadow,
		m.loadSuccess, m.loadError, m.calls, m.statuses, m.storeFailures, m.failAnswers} {
		c.Collect(ch)
	}
	m.mu.Lock()
	series := make([]*statSeries, 0, len(m.series))
	for _, s := range m.series {
		series = append(series, s)
	}
	m.mu.Unlock()
	for _, s := range series {
		deep := 0
		if len(s.labels) == 3 {
			deep = 1
		}
		for i, v := range [...]*atomic.Uint64{&s.total, &s.over, &s.near, &s.within, &s.shadowCount} {
			ch <- prometheus.MustNewConstMetric(statDescs[i][deep], prometheus.CounterValue, float64(v.Load()), s.labels...)
		}
	}
	state, serving := observe.BreakerClosed, true
	if s := m.server.Load(); s != nil {
		if s.health != nil {
			state = s.health.Breaker()
		}
		serving = s.Serving()
	}
	for _, st := range observe.BreakerStates() {
		v := 0.0
		if st == state {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.breakerDesc, prometheus.GaugeValue, v, st.String())
	}
	v := 0.0
	if serving {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(m.servingDesc, prometheus.GaugeValue, v)
}

// WithMetrics has the server count what it answers in m. A Metrics serves one server.
func WithMetrics(m *Metrics) Option {
	return named(func(s *Server) error {
		if m == nil {
			return errors.New("rls: WithMetrics(nil)")
		}
		s.metrics = m
		return nil
	}, "WithMetrics")
}

// maxStatLabelBytes bounds a label value of the per-descriptor metrics: a longer one (a
// request's value of up to MaxEntryBytes, with detailed_metric, value_to_metric or a supplied
// limit) keeps its first bytes and a digest of the whole, so that MaxStatSeries series stay
// small, and two values stay two series.
const maxStatLabelBytes = 256

// boundLabel returns v within maxStatLabelBytes (see there).
func boundLabel(v string) string {
	if len(v) <= maxStatLabelBytes {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return strings.ToValidUTF8(v[:maxStatLabelBytes-17], "") + "~" + hex.EncodeToString(sum[:8])
}

// seriesOf returns the series of a stat key, made on first use.
func (m *Metrics) seriesOf(key string) *statSeries {
	domain, key1, key2, deep := statLabels(key)
	domain, key1, key2 = boundLabel(domain), boundLabel(key1), boundLabel(key2)
	id := [3]string{domain, key1, "\x00"}
	if deep {
		id[2] = key2
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.series[id]; s != nil {
		return s
	}
	if len(m.series) >= MaxStatSeries {
		id = [3]string{domain, "_other", "\x00"}
		if s := m.series[id]; s != nil {
			return s
		}
		deep = false
	}
	s := &statSeries{labels: []string{id[0], id[1]}}
	if deep {
		s.labels = append(s.labels, id[2])
	}
	m.series[id] = s
	return s
}

// counted counts one call: its answer (resp, or err), and the statistics of its checks.
func (m *Metrics) counted(fm FailModes, domain string, checks []check, resp *rlsv3.RateLimitResponse, shadowed bool, err error, took time.Duration) {
	m.totalRequests.Inc()
	m.responseTime.Observe(took.Seconds())
	code := status.Code(err)
	switch {
	case err == nil:
		byCode(&m.callsByCode, m.calls, resp.OverallCode).Inc()
		for _, st := range resp.Statuses {
			byCode(&m.statusesByCode, m.statuses, st.Code).Inc()
		}
		if shadowed {
			m.globalShadow.Inc()
		}
	case code == codes.InvalidArgument:
		m.calls.WithLabelValues(code.String()).Inc()
		m.callErrors.WithLabelValues("service_error").Inc()
		return // no check was made
	default:
		m.calls.WithLabelValues(code.String()).Inc()
		if code == codes.Unavailable {
			m.callErrors.WithLabelValues("redis_error").Inc()
			m.failAnswers.WithLabelValues(FailError.String()).Inc()
		}
	}
	mode := fm.For(domain)
	for i := range checks {
		ch := &checks[i]
		if ch.err != nil {
			m.storeFailures.WithLabelValues(failureKind(ch.err)).Inc()
			if err == nil {
				m.failAnswers.WithLabelValues(mode.String()).Inc()
			}
		}
		if ch.limit == nil || ch.unlimited || ch.statKey == "" {
			continue
		}
		s := m.seriesOf(ch.statKey)
		s.total.Add(ch.hits)
		if ch.err != nil || err != nil {
			continue // the fail mode answered, or the call failed: counted in total_hits only, as the reference
		}
		m.count(s, ch)
	}
}

// byCode is the series of code in vec, from counters when it is one of theirs.
func byCode(counters *[3]prometheus.Counter, vec *prometheus.CounterVec, code rlsv3.RateLimitResponse_Code) prometheus.Counter {
	if code >= 0 && int(code) < len(counters) && counters[code] != nil {
		return counters[code]
	}
	return vec.WithLabelValues(code.String())
}

// count adds a check the store decided (or a limit of 0) to the over, near, within and
// shadow counts as envoyproxy/ratelimit's base_limiter.go does, from the count before the
// hits and after them: the count the store reports, and, for hits refused (which this server
// does not count), the count they would have made.
func (m *Metrics) count(s *statSeries, ch *check) {
	limit := uint64(ch.limit.RequestsPerUnit)
	var before, after uint64
	switch rem := uint64(max(ch.d.remaining, 0)); {
	case ch.limiter == nil: // a limit of 0: nothing counted, every hit over
	case ch.d.allowed:
		after = limit - min(rem, limit)
		before = after - min(ch.hits, after)
	default:
		before = limit - min(rem, limit)
	}
	if !ch.d.allowed || ch.limiter == nil {
		after = before + min(ch.hits, math.MaxUint64-before)
	}
	near := uint64(math.Floor(float64(float32(limit) * m.nearRatio)))
	if after > limit {
		over := after - limit
		if before >= limit {
			over = ch.hits
		} else {
			s.near.Add(limit - max(near, before))
		}
		s.over.Add(over)
		if ch.shadow {
			s.shadowCount.Add(over)
		}
		return
	}
	if after > near {
		if before >= near {
			s.near.Add(ch.hits)
		} else {
			s.near.Add(after - near)
		}
	}
	s.within.Add(ch.hits)
}

// failureKind is the label of a store failure: its kind, "canceled" for a call whose client
// went away, "other" for an error of no kind.
func failureKind(err error) string {
	if k := observe.ErrorKind(err); k != "" {
		return k
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	return "other"
}

// configLoaded counts a configuration put in force (ok) or refused.
func (m *Metrics) configLoaded(ok bool) {
	if ok {
		m.loadSuccess.Inc()
	} else {
		m.loadError.Inc()
	}
}
