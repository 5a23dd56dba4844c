package ratelimitprom_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/observe"
	ratelimitprom "github.com/a7d3e0dd/ratelimit/prometheus"
)

// Each policy's own verdict is counted: the request "burst" denies is allowed by "hourly".
func TestDecisions(t *testing.T) {
	obs := ratelimitprom.New()
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(obs.Hooks())),
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
	want := `
# HELP ratelimit_decisions_total Verdicts of each rate-limit policy, by outcome, by what decided (store, denial_cache, fallback, lease), and whether the policy is a shadow (its denials refused no client).
# TYPE ratelimit_decisions_total counter
ratelimit_decisions_total{outcome="allowed",policy="burst",shadow="false",source="denial_cache"} 0
ratelimit_decisions_total{outcome="allowed",policy="burst",shadow="false",source="fallback"} 0
ratelimit_decisions_total{outcome="allowed",policy="burst",shadow="false",source="lease"} 0
ratelimit_decisions_total{outcome="allowed",policy="burst",shadow="false",source="store"} 3
ratelimit_decisions_total{outcome="denied",policy="burst",shadow="false",source="denial_cache"} 0
ratelimit_decisions_total{outcome="denied",policy="burst",shadow="false",source="fallback"} 0
ratelimit_decisions_total{outcome="denied",policy="burst",shadow="false",source="lease"} 0
ratelimit_decisions_total{outcome="denied",policy="burst",shadow="false",source="store"} 1
ratelimit_decisions_total{outcome="allowed",policy="hourly",shadow="false",source="denial_cache"} 0
ratelimit_decisions_total{outcome="allowed",policy="hourly",shadow="false",source="fallback"} 0
ratelimit_decisions_total{outcome="allowed",policy="hourly",shadow="false",source="lease"} 0
ratelimit_decisions_total{outcome="allowed",policy="hourly",shadow="false",source="store"} 4
ratelimit_decisions_total{outcome="denied",policy="hourly",shadow="false",source="denial_cache"} 0
ratelimit_decisions_total{outcome="denied",policy="hourly",shadow="false",source="fallback"} 0
ratelimit_decisions_total{outcome="denied",policy="hourly",shadow="false",source="lease"} 0
ratelimit_decisions_total{outcome="denied",policy="hourly",shadow="false",source="store"} 0
`
	if err := testutil.CollectAndCompare(obs, strings.NewReader(want), "ratelimit_decisions_total"); err != nil {
		t.Error(err)
	}
	h := sample(t, obs, "ratelimit_decision_duration_seconds", "source=store").GetHistogram()
	if h.GetSampleCount() == 0 { // with an observer, the memory store's decisions are timed too
		t.Errorf("decision durations observed from the memory store: %d, want every decision", h.GetSampleCount())
	}
	if n := len(h.GetBucket()); n != len(ratelimitprom.DefaultBuckets()) {
		t.Errorf("%d buckets, want %d", n, len(ratelimitprom.DefaultBuckets()))
	}
	for _, s := range []string{"denial_cache", "fallback"} {
		if n := sample(t, obs, "ratelimit_decision_duration_seconds", "source="+s).GetHistogram().GetSampleCount(); n != 0 {
			t.Errorf("decision durations observed from the %s: %d, want 0", s, n)
		}
	}
}

// A shadow policy's verdicts are counted apart (shadow="true"): a denial it reports refused no
// client, so a rejection rate over the enforced policies (the example alert's) leaves it out.
// The request is admitted by "enforced", denied only by the shadow "trial".
func TestShadowDecisions(t *testing.T) {
	obs := ratelimitprom.New()
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(obs.Hooks())),
		ratelimit.Policy{Name: "enforced", Limit: 100, Window: time.Hour},
		ratelimit.Policy{Name: "trial", Limit: 1, Window: time.Hour, Shadow: true})
	for i := range 3 {
		if d, err := allow(l, "a"); err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v, %v; want admitted", i+1, d, err)
		}
	}
	for _, c := range []struct {
		labels string
		want   float64
	}{
		{"outcome=allowed,policy=enforced,shadow=false,source=store", 3},
		{"outcome=denied,policy=enforced,shadow=false,source=store", 0},
		{"outcome=allowed,policy=trial,shadow=true,source=store", 1},
		{"outcome=denied,policy=trial,shadow=true,source=store", 2},
	} {
		if got := value(t, obs, "ratelimit_decisions_total", c.labels); got != c.want {
			t.Errorf("ratelimit_decisions_total{%s} = %v; want %v", c.labels, got, c.want)
		}
	}
	if m := sample(t, obs, "ratelimit_decisions_total", "outcome=denied,policy=trial,shadow=false,source=store"); m != nil {
		t.Errorf("the shadow policy has enforced series too: %v", m)
	}
}

func TestBuckets(t *testing.T) {
	obs := ratelimitprom.New(ratelimitprom.WithBuckets(0.001, 0.1))
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(obs.Hooks())), ratelimit.Policy{Limit: 1, Window: time.Hour})
	if _, err := allow(l, "k"); err != nil {
		t.Fatal(err)
	}
	var bounds []float64
	for _, b := range sample(t, obs, "ratelimit_decision_duration_seconds", "source=store").GetHistogram().GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	if fmt.Sprint(bounds) != "[0.001 0.1]" {
		t.Errorf("buckets %v, want [0.001 0.1]", bounds)
	}
	defer func() {
		if recover() == nil {
			t.Error("New with buckets out of order did not panic")
		}
	}()
	ratelimitprom.New(ratelimitprom.WithBuckets(0.1, 0.001))
}

// A store that refuses connections: the first failure is Redis' own and opens the breaker;
// the second call is not made.
func TestStoreErrorsAndBreaker(t *testing.T) {
	obs := ratelimitprom.New()
	// On a clock of the test's own: the open breaker's first probe waits for it.
	store := ratelimit.NewRedisStore(refusedRedis(t), ratelimit.WithBreaker(1, time.Minute), ratelimit.WithObserver(obs.Hooks()),
		ratelimit.WithClock(fakeclock.New(fakeclock.T0)))
	l := mustNew(t, store, ratelimit.Policy{Limit: 10, Window: time.Minute})
	// The store's first dial (it reads Redis's maxmemory-policy when made) may already have
	// opened the breaker: then both checks fail at once.
	_, err1 := allow(l, "k")
	if _, err := allow(l, "k"); err1 == nil || observe.ErrorKind(err) != "breaker_open" {
		t.Fatalf("checks: %v, then %v; want a failure, then one of kind breaker_open", err1, err)
	}
	errs := func(kind string) float64 { return value(t, obs, "ratelimit_store_errors_total", "kind="+kind) }
	if got := errs("unavailable") + errs("breaker_open"); got != 2 {
		t.Errorf("store errors unavailable + breaker_open: %v, want 2", got)
	}
	if got := errs("timeout"); got != 0 {
		t.Errorf("store errors timeout: %v, want 0: a refused connection is unavailable", got)
	}
	breaker := func(wantOpen, wantOpened, wantClosed float64) {
		t.Helper()
		if got := value(t, obs, "ratelimit_breaker_open", ""); got != wantOpen {
			t.Errorf("ratelimit_breaker_open %v, want %v", got, wantOpen)
		}
		if got := value(t, obs, "ratelimit_breaker_transitions_total", "to=open"); got != wantOpened {
			t.Errorf("transitions to open %v, want %v", got, wantOpened)
		}
		if got := value(t, obs, "ratelimit_breaker_transitions_total", "to=closed"); got != wantClosed {
			t.Errorf("transitions to closed %v, want %v", got, wantClosed)
		}
	}
	breaker(1, 1, 0)
	obs.Hooks().BreakerChanged(observe.BreakerOpen, observe.BreakerClosed) // what the store reports when a probe succeeds (see TestRedis)
	breaker(0, 1, 1)
}

// A store that never answers: the call times out.
func TestStoreTimeout(t *testing.T) {
	obs := ratelimitprom.New()
	l := mustNew(t, ratelimit.NewRedisStore(silentRedis(t), ratelimit.WithObserver(obs.Hooks())), ratelimit.Policy{Limit: 10, Window: time.Minute})
	if _, err := allow(l, "k"); observe.ErrorKind(err) != "timeout" {
		t.Fatalf("check: %v, want one of kind timeout", err)
	}
	for kind, want := range map[string]float64{"timeout": 1, "unavailable": 0, "breaker_open": 0} {
		if got := value(t, obs, "ratelimit_store_errors_total", "kind="+kind); got != want {
			t.Errorf("store errors %s: %v, want %v", kind, got, want)
		}
	}
}

// While the store is down, the fallback decides under half of each limit, and says so.
func TestFallback(t *testing.T) {
	obs := ratelimitprom.New()
	store := ratelimit.NewRedisStore(refusedRedis(t), ratelimit.WithFallback(0.5), ratelimit.WithObserver(obs.Hooks()))
	l := mustNew(t, store, ratelimit.Policy{Name: "p", Limit: 4, Window: time.Hour})
	for i := range 3 {
		d, err := allow(l, "k")
		if err != nil || d.Source != observe.SourceFallback {
			t.Fatalf("request %d: %+v, %v; want a decision of the fallback", i+1, d, err)
		}
	}
	for labels, want := range map[string]float64{
		"outcome=allowed,policy=p,shadow=false,source=fallback": 2,
		"outcome=denied,policy=p,shadow=false,source=fallback":  1,
		"outcome=allowed,policy=p,shadow=false,source=store":    0,
	} {
		if got := value(t, obs, "ratelimit_decisions_total", labels); got != want {
			t.Errorf("decisions{%s} %v, want %v", labels, got, want)
		}
	}
	if n := sample(t, obs, "ratelimit_decision_duration_seconds", "source=fallback").GetHistogram().GetSampleCount(); n != 3 {
		t.Errorf("decision durations observed from the fallback: %d, want 3", n)
	}
	errs := value(t, obs, "ratelimit_store_errors_total", "kind=unavailable") + value(t, obs, "ratelimit_store_errors_total", "kind=breaker_open")
	if errs != 3 {
		t.Errorf("store errors: %v, want 3 (unavailable, or the breaker open)", errs)
	}
}

// Policy names beyond the bound are counted under one label.
func TestPolicyLabelBounded(t *testing.T) {
	obs := ratelimitprom.New()
	store := ratelimit.NewMemoryStore(ratelimit.WithObserver(obs.Hooks()))
	const names = 256 + 3
	for i := range names {
		l := mustNew(t, store, ratelimit.Policy{Name: fmt.Sprintf("p%03d", i), Limit: 10, Window: time.Hour})
		if _, err := allow(l, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if n := testutil.CollectAndCount(obs, "ratelimit_decisions_total"); n != (256+1)*8 {
		t.Errorf("%d decision series, want %d: 256 policies and _other, 8 each", n, (256+1)*8)
	}
	if got := value(t, obs, "ratelimit_decisions_total", "outcome=allowed,policy=_other,shadow=false,source=store"); got != 3 {
		t.Errorf("decisions of the policies beyond the bound: %v, want 3", got)
	}
	if got := value(t, obs, "ratelimit_decisions_total", "outcome=allowed,policy=p255,shadow=false,source=store"); got != 1 {
		t.Errorf("decisions of the 256th policy: %v, want 1", got)
	}
}

// Many goroutines, each limiter's policy first seen by several of them at once.
func TestConcurrent(t *testing.T) {
	obs := ratelimitprom.New()
	store := ratelimit.NewMemoryStore(ratelimit.WithObserver(obs.Hooks()))
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
	total := 0.0
	for i := range limiters {
		total += value(t, obs, "ratelimit_decisions_total", fmt.Sprintf("outcome=allowed,policy=p%d,shadow=false,source=store", i))
	}
	if total != 800 {
		t.Errorf("decisions counted: %v, want 800", total)
	}
}

// A request holding an in-flight slot is counted in ratelimit_inflight_slot_holders until its
// handler returns; then how long it held the slot is observed. The deprecated names,
// ratelimit_active_request_leases and ratelimit_request_lease_duration_seconds, carry the
// same figures.
func TestSlotHolders(t *testing.T) {
	obs := ratelimitprom.New()
	clock := fakeclock.New(fakeclock.T0)
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithObserver(obs.Hooks())),
		ratelimit.Policy{Name: "slots", Limit: 2, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	var during, duringOld float64
	h := ratelimit.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		during, duringOld = value(t, obs, "ratelimit_inflight_slot_holders", ""), value(t, obs, "ratelimit_active_request_leases", "")
		clock.Advance(2 * time.Second)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	after, afterOld := value(t, obs, "ratelimit_inflight_slot_holders", ""), value(t, obs, "ratelimit_active_request_leases", "")
	if during != 1 || after != 0 {
		t.Errorf("slot holders during the handler %v, after %v; want 1, 0", during, after)
	}
	if duringOld != during || afterOld != after {
		t.Errorf("ratelimit_active_request_leases during %v, after %v; want the new name's %v, %v", duringOld, afterOld, during, after)
	}
	held := sample(t, obs, "ratelimit_inflight_slot_hold_duration_seconds", "").GetHistogram()
	old := sample(t, obs, "ratelimit_request_lease_duration_seconds", "").GetHistogram()
	if held.GetSampleCount() != 1 || held.GetSampleSum() != 2 {
		t.Errorf("hold durations observed: %d, sum %v s; want 1, 2 s", held.GetSampleCount(), held.GetSampleSum())
	}
	if old.GetSampleCount() != held.GetSampleCount() || old.GetSampleSum() != held.GetSampleSum() || len(old.GetBucket()) != len(held.GetBucket()) {
		t.Fatalf("ratelimit_request_lease_duration_seconds: %d, sum %v; want the new name's %d, %v", old.GetSampleCount(), old.GetSampleSum(), held.GetSampleCount(), held.GetSampleSum())
	}
	for i, b := range held.GetBucket() {
		if o := old.GetBucket()[i]; o.GetUpperBound() != b.GetUpperBound() || o.GetCumulativeCount() != b.GetCumulativeCount() {
			t.Errorf("bucket %d: deprecated le=%v %d, new le=%v %d", i, o.GetUpperBound(), o.GetCumulativeCount(), b.GetUpperBound(), b.GetCumulativeCount())
		}
	}
}

// The deprecated names' help says which name to use instead.
func TestDeprecatedHelp(t *testing.T) {
	mfs := gather(t, ratelimitprom.New())
	for old, use := range map[string]string{"ratelimit_active_request_leases": "ratelimit_inflight_slot_holders",
		"ratelimit_request_lease_duration_seconds": "ratelimit_inflight_slot_hold_duration_seconds"} {
		if mf := mfs[old]; mf == nil || !strings.HasPrefix(mf.GetHelp(), "Deprecated: use "+use+" ") {
			t.Errorf("%s: help %q; want it to begin \"Deprecated: use %s\"", old, mf.GetHelp(), use)
		}
	}
}

// capture keeps a copy of the last decision's event (its Decided method, the one hook it sets).
type capture struct{ e ratelimit.DecisionEvent }

func (c *capture) Decided(e ratelimit.DecisionEvent) {
	c.e = e
	c.e.Results = append([]ratelimit.PolicyResult(nil), e.Results...) // valid only during the call
}

// Once a policy has been seen, Decided allocates nothing.
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
	obs := ratelimitprom.New()
	obs.Hooks().Decided(e) // sees the policies
	if n := testing.AllocsPerRun(1000, func() { obs.Hooks().Decided(e) }); n != 0 {
		t.Errorf("Decided allocates %v times, want 0", n)
	}
	if got := value(t, obs, "ratelimit_decisions_total", "outcome=allowed,policy=b,shadow=false,source=store"); got != 1002 {
		t.Errorf("decisions counted: %v, want 1002", got) // AllocsPerRun runs it once more to warm up
	}
}

// reporter is the Reporter of the rules module, which the Observer implements without this
// module depending on it.
type reporter interface {
	RulesApplied(version string)
	RulesRejected(err error)
}

var _ reporter = (*ratelimitprom.Observer)(nil)

// The gauge shows the version last applied, and only it; a rejection is counted and leaves it.
func TestRulesVersion(t *testing.T) {
	obs := ratelimitprom.New()
	if n := testutil.CollectAndCount(obs, "ratelimit_rules_version_info"); n != 0 {
		t.Errorf("%d version series before any version is applied, want 0", n)
	}
	loads := func(wantApplied, wantRejected float64) {
		t.Helper()
		if got := value(t, obs, "ratelimit_rules_loads_total", "result=applied"); got != wantApplied {
			t.Errorf("loads applied %v, want %v", got, wantApplied)
		}
		if got := value(t, obs, "ratelimit_rules_loads_total", "result=rejected"); got != wantRejected {
			t.Errorf("loads rejected %v, want %v", got, wantRejected)
		}
	}
	loads(0, 0)

	var r reporter = obs
	r.RulesApplied("v1")
	r.RulesApplied("v2")
	r.RulesRejected(errors.New("limits.yaml:3: rules[0].policies: want a list"))
	want := `
# HELP ratelimit_rules_version_info The version of the rate-limit rules in use (the latest applied), with value 1.
# TYPE ratelimit_rules_version_info gauge
ratelimit_rules_version_info{version="v2"} 1
`
	if err := testutil.CollectAndCompare(obs, strings.NewReader(want), "ratelimit_rules_version_info"); err != nil {
		t.Error(err)
	}
	loads(2, 1)

	// Not a version of the rules module, which reads only UTF-8: collecting it does not fail.
	r.RulesApplied("v\xff")
	if got := value(t, obs, "ratelimit_rules_version_info", "version=v\uFFFD"); got != 1 {
		t.Errorf("version v\\xff: %v, want 1 as v\uFFFD", got)
	}
}

// The rules module's EmptyReporter: ratelimit_rules_empty is 1 while the rules last applied
// are none (a document of allow_empty: true, which limits no request), else 0.
func TestRulesEmpty(t *testing.T) {
	obs := ratelimitprom.New()
	var r interface {
		RulesEmpty(version string, empty bool)
	} = obs
	if got := value(t, obs, "ratelimit_rules_empty", ""); got != 0 {
		t.Errorf("before any version: %v, want 0", got)
	}
	r.RulesEmpty("v1", true)
	if got := value(t, obs, "ratelimit_rules_empty", ""); got != 1 {
		t.Errorf("after a version without rules: %v, want 1", got)
	}
	r.RulesEmpty("v2", false)
	if got := value(t, obs, "ratelimit_rules_empty", ""); got != 0 {
		t.Errorf("after a version with rules: %v, want 0", got)
	}
}

// Engines apply versions while the Observer is collected; the last version applied is the
// one shown.
func TestRulesConcurrent(t *testing.T) {
	obs := ratelimitprom.New()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				obs.RulesApplied(fmt.Sprintf("v%d.%d", g, i))
				obs.RulesRejected(nil)
			}
			if n := testutil.CollectAndCount(obs, "ratelimit_rules_version_info"); n != 1 {
				t.Errorf("%d version series, want 1", n)
			}
		}()
	}
	wg.Wait()
	obs.RulesApplied("last")
	if got := value(t, obs, "ratelimit_rules_version_info", "version=last"); got != 1 {
		t.Errorf("version last: %v, want 1", got)
	}
	if n := testutil.CollectAndCount(obs, "ratelimit_rules_version_info"); n != 1 {
		t.Errorf("%d version series, want 1", n)
	}
	if got := value(t, obs, "ratelimit_rules_loads_total", "result=applied"); got != 8*50+1 {
		t.Errorf("loads applied %v, want %d", got, 8*50+1)
	}
	if got := value(t, obs, "ratelimit_rules_loads_total", "result=rejected"); got != 8*50 {
		t.Errorf("loads rejected %v, want %d", got, 8*50)
	}
}

// RulesApplied keeps a copy of the version, and RulesRejected allocates nothing.
func TestRulesReportAllocations(t *testing.T) {
	obs := ratelimitprom.New()
	err := errors.New("invalid")
	if n := testing.AllocsPerRun(100, func() { obs.RulesApplied("2026-11-23") }); n > 1 {
		t.Errorf("RulesApplied allocates %v times, want at most 1", n)
	}
	if n := testing.AllocsPerRun(100, func() { obs.RulesRejected(err) }); n != 0 {
		t.Errorf("RulesRejected allocates %v times, want 0", n)
	}
}

// WithBuckets given twice is refused as invalid buckets are (New panics, naming it): the second
// would silently replace the first.
func TestBucketsTwice(t *testing.T) {
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "WithBuckets given twice") {
			t.Errorf("New with WithBuckets twice: %v; want a panic naming it", p)
		}
	}()
	ratelimitprom.New(ratelimitprom.WithBuckets(0.001, 0.1), ratelimitprom.WithBuckets(0.01, 1))
}

// A closed store's breaker is gone: ratelimit_breaker_open, which counts the breakers not
// closed, no longer counts it (it stayed at 1, and RateLimitBreakerOpen fired for a store no
// longer used).
func TestBreakerOfAClosedStore(t *testing.T) {
	obs := ratelimitprom.New()
	store := ratelimit.NewRedisStore(refusedRedis(t), ratelimit.WithBreaker(1, time.Minute), ratelimit.WithObserver(obs.Hooks()),
		ratelimit.WithClock(fakeclock.New(fakeclock.T0))) // no probe: the breaker stays open
	l := mustNew(t, store, ratelimit.Policy{Limit: 10, Window: time.Minute})
	allow(l, "k")
	allow(l, "k")
	if got := value(t, obs, "ratelimit_breaker_open", ""); got != 1 {
		t.Fatalf("ratelimit_breaker_open %v before Close, want 1", got)
	}
	store.Close()
	store.Close()
	if got := value(t, obs, "ratelimit_breaker_open", ""); got != 0 {
		t.Errorf("ratelimit_breaker_open %v after Close, want 0", got)
	}
}

// A request a guard lets through unlimited because its store is closed counts a store error,
// of kind unavailable, as the guard logs it (none was counted: the closed store's outermost
// layer refused it before the layer that reports failures).
func TestClosedStoreCountsAnError(t *testing.T) {
	obs := ratelimitprom.New()
	store := ratelimit.NewRedisStore(refusedRedis(t), ratelimit.WithBreaker(0, 0), ratelimit.WithDenialCache(0), ratelimit.WithObserver(obs.Hooks()))
	l := mustNew(t, store, ratelimit.Policy{Limit: 10, Window: time.Minute})
	store.Close()
	before := value(t, obs, "ratelimit_store_errors_total", "kind=unavailable")
	h := ratelimit.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if got := value(t, obs, "ratelimit_requests_total", "result=unlimited"); got != 1 {
		t.Fatalf("requests unlimited %v, want 1", got)
	}
	if got := value(t, obs, "ratelimit_store_errors_total", "kind=unavailable") - before; got != 1 {
		t.Errorf("store errors of kind unavailable for the request over a closed store: %v, want 1", got)
	}
}
