package ratelimitotel_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/observe"
	ratelimitotel "github.com/a7d3e0dd/ratelimit/otel"
)

// Each policy's own verdict is counted: the request "burst" denies is allowed by "hourly".
func TestDecisions(t *testing.T) {
	m := newMeter(t)
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(m.Hooks())),
		ratelimit.Policy{Name: "burst", Limit: 2, Window: time.Hour},
		ratelimit.Policy{Name: "hourly", Limit: 100, Window: time.Hour})
	for i, key := range []string{"a", "a", "a", "b"} {
		d, err := allow(l, key)
		if err != nil {
			t.Fatal(err)
		}
		if want := i != 2; d.Allowed != want {
			t.Fatalf("request %d: allowed %v, want %v", i+1, d.Allowed, want)
		}
	}
	for _, c := range []struct {
		policy, outcome string
		want            int64
	}{{"burst", "allowed", 3}, {"burst", "denied", 1}, {"hourly", "allowed", 4}, {"hourly", "denied", 0}} {
		if got := m.decisions(t, c.policy, c.outcome, "store"); got != c.want {
			t.Errorf("decisions{policy=%s, outcome=%s, source=store} %d, want %d", c.policy, c.outcome, got, c.want)
		}
	}
	decisions := m.metric(t, "ratelimit.policy.decisions")
	if s := decisions.Data.(metricdata.Sum[int64]); !s.IsMonotonic || s.Temporality != metricdata.CumulativeTemporality || len(s.DataPoints) != 16 {
		t.Errorf("ratelimit.decisions: monotonic %v, %v, with %d series; want a cumulative counter with 16: 2 policies, 4 sources, 2 outcomes",
			s.IsMonotonic, s.Temporality, len(s.DataPoints))
	}
	if decisions.Unit != "{decision}" {
		t.Errorf("ratelimit.decisions unit %q, want {decision}", decisions.Unit)
	}
	// The memory store's decisions are timed too, with an observer.
	if n := m.histogram0(t, "ratelimit.decision.duration"); n == 0 {
		t.Errorf("decision durations observed from the memory store: %d, want every decision", n)
	}
}

// A shadow policy's verdicts carry ratelimit.policy.shadow true: a denial it reports refused no
// client. The request is admitted by "enforced", denied only by the shadow "trial".
func TestShadowDecisions(t *testing.T) {
	m := newMeter(t)
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(m.Hooks())),
		ratelimit.Policy{Name: "enforced", Limit: 100, Window: time.Hour},
		ratelimit.Policy{Name: "trial", Limit: 1, Window: time.Hour, Shadow: true})
	for i := range 3 {
		if d, err := allow(l, "a"); err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v, %v; want admitted", i+1, d, err)
		}
	}
	at := func(policy, outcome string, shadow bool) int64 {
		return m.sum(t, "ratelimit.policy.decisions", attribute.String("ratelimit.policy", policy), attribute.String("ratelimit.decision", outcome),
			attribute.String("ratelimit.source", "store"), attribute.Bool("ratelimit.policy.shadow", shadow))
	}
	for _, c := range []struct {
		policy, outcome string
		shadow          bool
		want            int64
	}{{"enforced", "allowed", false, 3}, {"enforced", "denied", false, 0}, {"trial", "allowed", true, 1}, {"trial", "denied", true, 2}, {"trial", "denied", false, 0}} {
		if got := at(c.policy, c.outcome, c.shadow); got != c.want {
			t.Errorf("decisions{policy=%s, outcome=%s, shadow=%v} %d, want %d", c.policy, c.outcome, c.shadow, got, c.want)
		}
	}
}

// A store that refuses connections: the first failure is Redis' own and opens the breaker;
// the second call is not made.
func TestStoreErrorsAndBreaker(t *testing.T) {
	m := newMeter(t)
	// On a clock of the test's own: the open breaker's first probe waits for it.
	store := ratelimit.NewRedisStore(refusedRedis(t), ratelimit.WithBreaker(1, time.Minute), ratelimit.WithObserver(m.Hooks()),
		ratelimit.WithClock(fakeclock.New(fakeclock.T0)))
	l := mustNew(t, store, ratelimit.Policy{Limit: 10, Window: time.Minute})
	// The store's first dial (it reads Redis's maxmemory-policy when made) may already have
	// opened the breaker: then both checks fail at once.
	first, err1 := allow(l, "k")
	if _, err := allow(l, "k"); err1 == nil || observe.ErrorKind(err) != "breaker_open" {
		t.Fatalf("checks: %+v, %v, then %v; want a failure, then one of kind breaker_open", first, err1, err)
	}
	if got := m.storeErrors(t, "unavailable") + m.storeErrors(t, "breaker_open"); got != 2 {
		t.Errorf("store errors unavailable + breaker_open: %d, want 2", got)
	}
	if got := m.storeErrors(t, "timeout"); got != 0 {
		t.Errorf("store errors timeout: %d, want 0: a refused connection is unavailable", got)
	}
	m.breaker(t, 1, 1, 0)
	m.Hooks().BreakerChanged(observe.BreakerOpen, observe.BreakerClosed) // what the store reports when a probe succeeds (see TestRedis)
	m.breaker(t, 0, 1, 1)
}

// A store that never answers: the call times out.
func TestStoreTimeout(t *testing.T) {
	m := newMeter(t)
	l := mustNew(t, ratelimit.NewRedisStore(silentRedis(t), ratelimit.WithObserver(m.Hooks())), ratelimit.Policy{Limit: 10, Window: time.Minute})
	if _, err := allow(l, "k"); observe.ErrorKind(err) != "timeout" {
		t.Fatalf("check: %v, want one of kind timeout", err)
	}
	for kind, want := range map[string]int64{"timeout": 1, "unavailable": 0, "breaker_open": 0} {
		if got := m.storeErrors(t, kind); got != want {
			t.Errorf("store errors %s: %d, want %d", kind, got, want)
		}
	}
}

// While the store is down, the fallback decides under half of each limit, and says so.
func TestFallback(t *testing.T) {
	m := newMeter(t)
	store := ratelimit.NewRedisStore(refusedRedis(t), ratelimit.WithFallback(0.5), ratelimit.WithObserver(m.Hooks()))
	l := mustNew(t, store, ratelimit.Policy{Name: "p", Limit: 4, Window: time.Hour})
	for i := range 3 {
		d, err := allow(l, "k")
		if err != nil || d.Source != observe.SourceFallback {
			t.Fatalf("request %d: %+v, %v; want a decision of the fallback", i+1, d, err)
		}
	}
	for _, c := range []struct {
		outcome, source string
		want            int64
	}{{"allowed", "fallback", 2}, {"denied", "fallback", 1}, {"allowed", "store", 0}} {
		if got := m.decisions(t, "p", c.outcome, c.source); got != c.want {
			t.Errorf("decisions{outcome=%s, source=%s} %d, want %d", c.outcome, c.source, got, c.want)
		}
	}
	h := m.histogram(t, "ratelimit.decision.duration", attribute.String("ratelimit.source", "fallback"))
	if h.Count != 3 {
		t.Errorf("decision durations observed from the fallback: %d, want 3", h.Count)
	}
	if !slices.Equal(h.Bounds, ratelimitotel.DefaultBuckets()) {
		t.Errorf("bucket bounds %v, want DefaultBuckets()", h.Bounds)
	}
	if unit := m.metric(t, "ratelimit.decision.duration").Unit; unit != "s" {
		t.Errorf("ratelimit.decision.duration unit %q, want s", unit)
	}
	if errs := m.storeErrors(t, "unavailable") + m.storeErrors(t, "breaker_open"); errs != 3 {
		t.Errorf("store errors: %d, want 3 (unavailable, or the breaker open)", errs)
	}
}

// Policy names beyond the bound are recorded under one attribute value.
func TestPolicyAttributeBounded(t *testing.T) {
	m := newMeter(t)
	store := ratelimit.NewMemoryStore(ratelimit.WithObserver(m.Hooks()))
	const names = 256 + 3
	for i := range names {
		l := mustNew(t, store, ratelimit.Policy{Name: fmt.Sprintf("p%03d", i), Limit: 10, Window: time.Hour})
		if _, err := allow(l, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(m.metric(t, "ratelimit.policy.decisions").Data.(metricdata.Sum[int64]).DataPoints); n != (256+1)*8 {
		t.Errorf("%d decision series, want %d: 256 policies and _other, 8 each", n, (256+1)*8)
	}
	if got := m.decisions(t, "_other", "allowed", "store"); got != 3 {
		t.Errorf("decisions of the policies beyond the bound: %d, want 3", got)
	}
	if got := m.decisions(t, "p255", "allowed", "store"); got != 1 {
		t.Errorf("decisions of the 256th policy: %d, want 1", got)
	}
}

// Many goroutines, each limiter's policy first seen by several of them at once.
func TestConcurrent(t *testing.T) {
	m := newMeter(t)
	store := ratelimit.NewMemoryStore(ratelimit.WithObserver(m.Hooks()))
	var limiters []*ratelimit.Limiter
	for i := range 4 {
		limiters = append(limiters, mustNew(t, store, ratelimit.Policy{Name: fmt.Sprintf("p%d", i), Limit: 1e6, Window: time.Hour}))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				if _, err := allow(limiters[(g+i)%len(limiters)], "k"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var total int64
	for i := range limiters {
		total += m.decisions(t, fmt.Sprintf("p%d", i), "allowed", "store")
	}
	if total != 800 {
		t.Errorf("decisions counted: %d, want 800", total)
	}
}

// capture keeps a copy of the last decision's event (its Decided method, the one hook it sets).
type capture struct{ e ratelimit.DecisionEvent }

func (c *capture) Decided(e ratelimit.DecisionEvent) {
	c.e = e
	c.e.Results = append([]ratelimit.PolicyResult(nil), e.Results...) // valid only during the call
}

// Once a policy has been seen, Decided allocates nothing, with the SDK recording.
func TestDecidedDoesNotAllocate(t *testing.T) {
	var c capture
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(&ratelimit.Observer{Decided: c.Decided})),
		ratelimit.Policy{Name: "a", Limit: 10, Window: time.Second},
		ratelimit.Policy{Name: "b", Limit: 1000, Window: time.Hour})
	if _, err := allow(l, "k"); err != nil {
		t.Fatal(err)
	}
	e := c.e
	e.Latency = 3 * time.Microsecond
	m := newMeter(t)
	m.Hooks().Decided(e) // sees the policies
	if n := testing.AllocsPerRun(1000, func() { m.Hooks().Decided(e) }); n != 0 {
		t.Errorf("Decided allocates %v times, want 0", n)
	}
	if got := m.decisions(t, "b", "allowed", "store"); got != 1002 {
		t.Errorf("decisions counted: %d, want 1002", got) // AllocsPerRun runs it once more to warm up
	}
}

// reporter is the Reporter of the rules module, which the Observer implements without this
// module depending on it.
type reporter interface {
	RulesApplied(version string)
	RulesRejected(err error)
}

var _ reporter = (*ratelimitotel.Observer)(nil)

// versions returns the data points of ratelimit.rules.version: each version reported and its
// value, none when the instrument reported nothing.
func (m meter) versions(t testing.TB) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != "ratelimit.rules.version" {
				continue
			}
			g, ok := mt.Data.(metricdata.Gauge[int64])
			if !ok {
				t.Fatal("ratelimit.rules.version is not an int64 gauge")
			}
			for _, dp := range g.DataPoints {
				v, _ := dp.Attributes.Value("ratelimit.rules.version")
				got[v.AsString()] = dp.Value
			}
		}
	}
	return got
}

// The gauge reports the version last applied, and only it; a rejection is counted and leaves
// it.
func TestRulesVersion(t *testing.T) {
	m := newMeter(t)
	if got := m.versions(t); len(got) != 0 {
		t.Errorf("versions %v before any is applied, want none", got)
	}
	loads := func(wantApplied, wantRejected int64) {
		t.Helper()
		s := m.metric(t, "ratelimit.rules.loads").Data.(metricdata.Sum[int64])
		if !s.IsMonotonic || len(s.DataPoints) != 2 {
			t.Errorf("ratelimit.rules.loads: monotonic %v, with %d series; want a counter with 2", s.IsMonotonic, len(s.DataPoints))
		}
		if got := m.sum(t, "ratelimit.rules.loads", attribute.String("ratelimit.rules.result", "applied")); got != wantApplied {
			t.Errorf("loads applied %d, want %d", got, wantApplied)
		}
		if got := m.sum(t, "ratelimit.rules.loads", attribute.String("ratelimit.rules.result", "rejected")); got != wantRejected {
			t.Errorf("loads rejected %d, want %d", got, wantRejected)
		}
	}
	loads(0, 0)

	var r reporter = m.Observer
	r.RulesApplied("v1")
	if got := m.versions(t); !maps.Equal(got, map[string]int64{"v1": 1}) {
		t.Errorf("versions %v, want v1:1", got)
	}
	r.RulesApplied("v2")
	r.RulesRejected(errors.New("limits.yaml:3: rules[0].policies: want a list"))
	if got := m.versions(t); !maps.Equal(got, map[string]int64{"v2": 1}) {
		t.Errorf("versions %v, want v2:1 alone", got)
	}
	loads(2, 1)

	// Not a version of the rules module, which reads only UTF-8: reported as the Prometheus
	// observer labels it, valid UTF-8 (an OTLP exporter refuses a batch holding invalid UTF-8).
	r.RulesApplied("v\xff")
	if got := m.versions(t); !maps.Equal(got, map[string]int64{"v\uFFFD": 1}) {
		t.Errorf("versions %v, want v\uFFFD:1", got)
	}
}

// The rules module's EmptyReporter: ratelimit.rules.empty is 1 while the rules last applied
// are none (a document of allow_empty: true, which limits no request), else 0, from the start.
func TestRulesEmpty(t *testing.T) {
	m := newMeter(t)
	empty := func() int64 {
		t.Helper()
		g, ok := m.metric(t, "ratelimit.rules.empty").Data.(metricdata.Gauge[int64])
		if !ok || len(g.DataPoints) != 1 {
			t.Fatalf("ratelimit.rules.empty: %+v; want an int64 gauge of one series", g)
		}
		return g.DataPoints[0].Value
	}
	var r interface {
		RulesEmpty(version string, empty bool)
	} = m.Observer
	if got := empty(); got != 0 {
		t.Errorf("before any version: %d, want 0", got)
	}
	r.RulesEmpty("v1", true)
	if got := empty(); got != 1 {
		t.Errorf("after a version without rules: %d, want 1", got)
	}
	r.RulesEmpty("v2", false)
	if got := empty(); got != 0 {
		t.Errorf("after a version with rules: %d, want 0", got)
	}
}

// Engines apply versions while the SDK collects; the last version applied is the one
// reported.
func TestRulesConcurrent(t *testing.T) {
	m := newMeter(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				m.RulesApplied(fmt.Sprintf("v%d.%d", g, i))
				m.RulesRejected(nil)
			}
			if got := m.versions(t); len(got) != 1 {
				t.Errorf("versions %v, want one", got)
			}
		}()
	}
	wg.Wait()
	m.RulesApplied("last")
	if got := m.versions(t); !maps.Equal(got, map[string]int64{"last": 1}) {
		t.Errorf("versions %v, want last:1 alone", got)
	}
	if got := m.sum(t, "ratelimit.rules.loads", attribute.String("ratelimit.rules.result", "applied")); got != 8*50+1 {
		t.Errorf("loads applied %d, want %d", got, 8*50+1)
	}
	if got := m.sum(t, "ratelimit.rules.loads", attribute.String("ratelimit.rules.result", "rejected")); got != 8*50 {
		t.Errorf("loads rejected %d, want %d", got, 8*50)
	}
}

// RulesApplied builds the attributes of the version once, for every collection; RulesRejected
// allocates nothing, with the SDK recording.
func TestRulesReportAllocations(t *testing.T) {
	m := newMeter(t)
	err := errors.New("invalid")
	if n := testing.AllocsPerRun(100, func() { m.RulesApplied("2026-11-23") }); n > 5 {
		t.Errorf("RulesApplied allocates %v times, want at most 5", n)
	}
	if n := testing.AllocsPerRun(100, func() { m.RulesRejected(err) }); n != 0 {
		t.Errorf("RulesRejected allocates %v times, want 0", n)
	}
}

// A closed store's breaker is gone: ratelimit.breaker.open, which counts the breakers not
// closed, no longer counts it.
func TestBreakerOfAClosedStore(t *testing.T) {
	m := newMeter(t)
	store := ratelimit.NewRedisStore(refusedRedis(t), ratelimit.WithBreaker(1, time.Minute), ratelimit.WithObserver(m.Hooks()),
		ratelimit.WithClock(fakeclock.New(fakeclock.T0))) // no probe: the breaker stays open
	l := mustNew(t, store, ratelimit.Policy{Limit: 10, Window: time.Minute})
	allow(l, "k")
	allow(l, "k")
	if got := m.sum(t, "ratelimit.breaker.open"); got != 1 {
		t.Fatalf("ratelimit.breaker.open %d before Close, want 1", got)
	}
	store.Close()
	store.Close()
	if got := m.sum(t, "ratelimit.breaker.open"); got != 0 {
		t.Errorf("ratelimit.breaker.open %d after Close, want 0", got)
	}
}

// A request a guard lets through unlimited because its store is closed counts a store error,
// of kind unavailable, as the guard logs it.
func TestClosedStoreCountsAnError(t *testing.T) {
	m := newMeter(t)
	store := ratelimit.NewRedisStore(refusedRedis(t), ratelimit.WithBreaker(0, 0), ratelimit.WithDenialCache(0), ratelimit.WithObserver(m.Hooks()))
	l := mustNew(t, store, ratelimit.Policy{Limit: 10, Window: time.Minute})
	store.Close()
	errs := func() int64 { // 0 before the first is recorded
		if !m.recorded(t, "ratelimit.store.errors") {
			return 0
		}
		return m.storeErrors(t, "unavailable")
	}
	before := errs()
	h := ratelimit.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if got := m.sum(t, "ratelimit.requests", attribute.String("ratelimit.result", "unlimited")); got != 1 {
		t.Fatalf("requests unlimited %d, want 1", got)
	}
	if got := errs() - before; got != 1 {
		t.Errorf("store errors of kind unavailable for the request over a closed store: %d, want 1", got)
	}
}
