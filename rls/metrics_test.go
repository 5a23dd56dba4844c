package rls

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/status"
)

// scrape gathers m through a registry of its own, as /metrics serves it: each sample by its
// name and labels, `name{k="v",...}` (a histogram by its _count).
func scrape(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, mt := range f.Metric {
			var labels []string
			for _, l := range mt.Label {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			name := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case mt.Counter != nil:
				out[name] = mt.Counter.GetValue()
			case mt.Gauge != nil:
				out[name] = mt.Gauge.GetValue()
			case mt.Histogram != nil:
				out[f.GetName()+"_count{"+strings.Join(labels, ",")+"}"] = float64(mt.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

// want compares the samples named in want with got, and reports every difference.
func wantSamples(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if v, ok := got[n]; !ok || v != want[n] {
			t.Errorf("%s = %v (present %v), want %v", n, v, ok, want[n])
		}
	}
}

func newMetrics(t *testing.T) *Metrics {
	t.Helper()
	m, err := NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMetricsCountWhatWasAnswered makes a sequence of calls, tallies their answers by code,
// and finds the counters at those figures.
func TestMetricsCountWhatWasAnswered(t *testing.T) {
	m := newMetrics(t)
	f := newFixture(t, semanticsConfig, WithMetrics(m))
	reqs := []*rlsv3.RateLimitRequest{
		request("edge", desc("ip", "1")),
		request("edge", desc("ip", "1"), desc("path", "/api/a")),
		request("edge", desc("ip", "1"), desc("path", "/trial")),
		request("edge", desc("ip", "1"), desc("path", "/trial"), desc("path", "/free")),
		request("edge", desc("path", "/closed")),
		request("edge", desc("tenant", "t"), desc("path", "/api/b")),
		request("edge", desc("quota", "q")),
		request("edge", desc("quota", "q")),
		request("edge", desc("user", "u", "plan", "free")),
		request("edge", hits(5, desc("path", "/api/c"))),
		request("edge", limited(0, typev3.RateLimitUnit_MINUTE, desc("x", "y"))),
		request("nowhere", desc("ip", "1")),
		request("edge"),                                                       // no descriptors: InvalidArgument
		request("", desc("a", "b")),                                           // no domain: InvalidArgument
		request("edge", limited(5, typev3.RateLimitUnit(42), desc("x", "y"))), // an unknown unit
	}
	calls, statuses := map[string]float64{}, map[string]float64{}
	bad := 0.0
	for i := 0; i < 3; i++ { // three rounds, the later ones over more limits
		for _, req := range reqs {
			resp, err := f.srv.ShouldRateLimit(context.Background(), req)
			if err != nil {
				calls[status.Code(err).String()]++
				bad++
				continue
			}
			calls[resp.OverallCode.String()]++
			for _, st := range resp.Statuses {
				statuses[st.Code.String()]++
			}
		}
		f.clock.Advance(500 * time.Millisecond)
	}
	if calls["OK"] == 0 || calls["OVER_LIMIT"] == 0 || statuses["OVER_LIMIT"] == 0 || bad == 0 {
		t.Fatalf("the sequence should have every answer: calls %v, statuses %v", calls, statuses)
	}
	want := map[string]float64{}
	for _, code := range []string{"OK", "OVER_LIMIT", "InvalidArgument", "Unavailable"} {
		want[fmt.Sprintf("ratelimit_rls_calls_total{code=%q}", code)] = calls[code]
	}
	for _, code := range []string{"OK", "OVER_LIMIT"} {
		want[fmt.Sprintf("ratelimit_rls_statuses_total{code=%q}", code)] = statuses[code]
	}
	n := float64(3 * len(reqs))
	want[`ratelimit_service_total_requests{grpc_method="ShouldRateLimit"}`] = n
	want[`ratelimit_service_response_time_seconds_count{grpc_method="ShouldRateLimit"}`] = n
	want[`ratelimit_service_should_rate_limit_error{err_type="service_error"}`] = bad
	want[`ratelimit_service_should_rate_limit_error{err_type="redis_error"}`] = 0
	want[`ratelimit_rls_fail_mode_answers_total{mode="error"}`] = 0
	want[`ratelimit_service_config_load_success{}`] = 1
	want[`ratelimit_rls_serving{}`] = 1
	want[`ratelimit_rls_store_breaker{state="closed"}`] = 1
	want[`ratelimit_rls_store_breaker{state="open"}`] = 0
	wantSamples(t, scrape(t, m), want)
}

// TestMetricsCountFailModeAnswers counts, over a store that cannot decide, the store failures
// and the fail modes' answers, against what each call was answered.
func TestMetricsCountFailModeAnswers(t *testing.T) {
	var files []File
	for _, d := range []string{"edge", "internal", "other"} {
		files = append(files, File{Name: d + ".yaml", Data: []byte("domain: " + d + "\ndescriptors:\n  - key: ip\n    rate_limit: {unit: second, requests_per_unit: 3}\n")})
	}
	cfg, err := ParseConfig(files...)
	if err != nil {
		t.Fatal(err)
	}
	fm, err := ParseFailModes("allow,edge=deny,internal=error")
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics(t)
	srv, err := NewServer(failingStore{errors.New("down")}, cfg, WithFailModes(fm), WithMetrics(m),
		WithClock(fakeclock.New(fakeclock.T0)), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]float64{}
	failures, edgeHits, calls := 0.0, 0.0, map[string]float64{}
	for i, domain := range []string{"edge", "internal", "other", "edge", "other", "internal", "edge"} {
		req := request(domain, desc("ip", "1"))
		for j := 0; j < i%3; j++ { // one to three descriptors, each decided by the store
			req.Descriptors = append(req.Descriptors, desc("ip", fmt.Sprint(j)))
		}
		failures += float64(len(req.Descriptors))
		if domain == "edge" {
			edgeHits += float64(len(req.Descriptors))
		}
		resp, err := srv.ShouldRateLimit(context.Background(), req)
		if err != nil {
			calls[status.Code(err).String()]++
			answers["error"]++
			continue
		}
		calls[resp.OverallCode.String()]++
		for _, st := range resp.Statuses {
			if st.Code == rlsv3.RateLimitResponse_OVER_LIMIT {
				answers["deny"]++
			} else {
				answers["allow"]++
			}
		}
	}
	wantSamples(t, scrape(t, m), map[string]float64{
		`ratelimit_rls_fail_mode_answers_total{mode="error"}`:               answers["error"],
		`ratelimit_rls_fail_mode_answers_total{mode="allow"}`:               answers["allow"],
		`ratelimit_rls_fail_mode_answers_total{mode="deny"}`:                answers["deny"],
		`ratelimit_rls_store_failures_total{kind="other"}`:                  failures,
		`ratelimit_rls_calls_total{code="Unavailable"}`:                     calls["Unavailable"],
		`ratelimit_rls_calls_total{code="OK"}`:                              calls["OK"],
		`ratelimit_rls_calls_total{code="OVER_LIMIT"}`:                      calls["OVER_LIMIT"],
		`ratelimit_service_should_rate_limit_error{err_type="redis_error"}`: calls["Unavailable"],
		// The fail mode's answers count as hits, and nothing else (as the reference, whose
		// call fails then).
		`ratelimit_service_rate_limit_total_hits{domain="edge",key1="ip"}`:   edgeHits,
		`ratelimit_service_rate_limit_within_limit{domain="edge",key1="ip"}`: 0,
		`ratelimit_service_rate_limit_over_limit{domain="edge",key1="ip"}`:   0,
	})
	if answers["error"] == 0 || answers["allow"] == 0 || answers["deny"] == 0 {
		t.Errorf("every mode should have answered: %v", answers)
	}
}

const statsConfig = `domain: edge
descriptors:
  - key: ip
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: path
    value: /api/*
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: path
    value: /trial
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: path
    value: /free
    rate_limit: {unlimited: true}
  - key: user
    descriptors:
      - key: plan
        value: free
        rate_limit: {unit: month, requests_per_unit: 2}
        descriptors:
          - key: tier
            rate_limit: {unit: day, requests_per_unit: 100}
`

// TestReferenceStats counts hits under envoyproxy/ratelimit's names and labels, with the
// figures its base limiter gives the same calls (worked out by hand from base_limiter.go,
// NEAR_LIMIT_RATIO 0.8).
func TestReferenceStats(t *testing.T) {
	m := newMetrics(t)
	f := newFixture(t, statsConfig, WithMetrics(m))
	for i := 0; i < 5; i++ { // 3 a second: 3 within (the third near: above 2), 2 over
		f.call(request("edge", desc("ip", "1")))
	}
	// 10 a minute, near above 8: 7 within; 3 within, 2 of them near; 5 over (all, the count
	// being at the limit before them).
	for _, n := range []uint64{7, 3, 5} {
		f.call(request("edge", hits(n, desc("path", "/api/x"))))
	}
	for i := 0; i < 3; i++ { // shadow, 2 a minute, near above 1: 2 within, 1 near, 1 over and shadow
		if got := summary(f.call(request("edge", desc("path", "/trial")))); !strings.HasPrefix(got, "OK: OK") {
			t.Fatalf("a shadow rule answered %s", got)
		}
	}
	f.call(request("edge", desc("path", "/free")))                             // unlimited: no statistics
	f.call(request("edge", desc("user", "u", "plan", "free")))                 // edge.user.plan_free
	f.call(request("edge", desc("user", "u", "plan", "free", "tier", "gold"))) // edge.user.plan_free.tier: the same series
	for i := 0; i < 2; i++ {                                                   // a request-supplied limit of 1, near above 0: 1 within and near, 1 over
		f.call(request("edge", limited(1, typev3.RateLimitUnit_MINUTE, desc("ip", "10.0.0.1"))))
	}
	got := scrape(t, m)
	want := map[string]float64{}
	for _, s := range []struct {
		labels                              string
		total, within, near, over, shadowed float64
	}{
		{`domain="edge",key1="ip"`, 5, 3, 1, 2, 0},
		{`domain="edge",key1="path_/api/*"`, 15, 10, 2, 5, 0},
		{`domain="edge",key1="path_/trial"`, 3, 2, 1, 1, 1},
		{`domain="edge",key1="user",key2="plan_free"`, 2, 2, 0, 0, 0},
		{`domain="edge",key1="ip_10_0_0_1"`, 2, 1, 1, 1, 0},
	} {
		for name, v := range map[string]float64{"total_hits": s.total, "within_limit": s.within, "near_limit": s.near,
			"over_limit": s.over, "shadow_mode": s.shadowed} {
			want["ratelimit_service_rate_limit_"+name+"{"+s.labels+"}"] = v
		}
	}
	want[`ratelimit_service_total_requests{grpc_method="ShouldRateLimit"}`] = 16
	wantSamples(t, got, want)
	for name := range got {
		if strings.Contains(name, "path_/free") {
			t.Errorf("an unlimited rule has statistics: %s", name)
		}
	}
}

// TestGlobalShadowModeCounted counts a call over its limit that the global shadow mode
// answered OK.
func TestGlobalShadowModeCounted(t *testing.T) {
	m := newMetrics(t)
	f := newFixture(t, semanticsConfig, WithMetrics(m), WithGlobalShadowMode())
	f.call(request("edge", desc("path", "/closed")))
	f.call(request("edge", desc("ip", "1")))
	wantSamples(t, scrape(t, m), map[string]float64{
		`ratelimit_service_global_shadow_mode{}`: 1,
		`ratelimit_rls_calls_total{code="OK"}`:   2,
	})
}

// TestConfigLoadsCounted counts the configurations put in force and those refused.
func TestConfigLoadsCounted(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(dir+"/edge.yaml", []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(semanticsConfig)
	cfg, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics(t)
	srv, err := NewServer(memoryStore(t, fakeclock.New(fakeclock.T0)), cfg, WithMetrics(m), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReloader(srv, dir, quietLogger())
	write("domain: edge\ndescriptors: [{key: a, rate_limit: {unit: fortnight, requests_per_unit: 1}}]\n")
	if _, err := r.Reload(); err == nil {
		t.Fatal("a bad unit was put in force")
	}
	write("domain: edge\ndescriptors: [{key: a, rate_limit: {unit: hour, requests_per_unit: 1}}]\n")
	if ok, err := r.Reload(); !ok || err != nil {
		t.Fatalf("Reload: %v, %v", ok, err)
	}
	wantSamples(t, scrape(t, m), map[string]float64{
		`ratelimit_service_config_load_success{}`: 2,
		`ratelimit_service_config_load_error{}`:   1,
	})
	if _, err := NewServer(memoryStore(t, fakeclock.New(fakeclock.T0)), cfg, WithMetrics(m)); err == nil {
		t.Error("one Metrics was given to two servers")
	}
}

// TestStatKey names the statistics as envoyproxy/ratelimit's GetLimit does, with
// detailed_metric, value_to_metric and share_threshold.
func TestStatKey(t *testing.T) {
	cfg, err := ParseConfig(File{Name: "d.yaml", Data: []byte(`domain: d
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: method
        rate_limit: {unit: second, requests_per_unit: 1}
  - key: client
    value: team-*
    descriptors:
      - key: op
        detailed_metric: true
        rate_limit: {unit: second, requests_per_unit: 1}
  - key: bucket
    value: b*
    share_threshold: true
    detailed_metric: true
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: plain
    value: x*
    value_to_metric: true
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: wild
    value: w*
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: ip
    detailed_metric: true
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: host
    rate_limit: {unit: second, requests_per_unit: 1}
`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		entries []entry
		want    string
	}{
		{[]entry{{"route", "/a"}, {"method", "GET"}}, "d.route_/a.method"},
		{[]entry{{"client", "team-1"}, {"op", "read"}}, "d.client_team-1.op_read"},
		{[]entry{{"bucket", "b12"}}, "d.bucket_b*"},
		{[]entry{{"plain", "x9"}}, "d.plain_x9"},
		{[]entry{{"wild", "w9"}}, "d.wild_w*"},
		{[]entry{{"ip", "10.1.2.3"}}, "d.ip_10_1_2_3"},
		{[]entry{{"host", "a:b|c"}}, "d.host"},
	} {
		r := cfg.lookup("d", tc.entries)
		if r == nil {
			t.Fatalf("%v: no rule", tc.entries)
		}
		if got := cfg.statKey("d", tc.entries, r); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.entries, got, tc.want)
		}
	}
	if got := overrideStatKey("d", []entry{{"host", "a:b|c"}, {"k", ""}}); got != "d.host_a_b_c.k" {
		t.Errorf("overrideStatKey = %q, want d.host_a_b_c.k", got)
	}
}

// TestStatSeriesBounded counts the hits of series past MaxStatSeries in their domain's
// _other series.
func TestStatSeriesBounded(t *testing.T) {
	m := newMetrics(t)
	for i := 0; i < MaxStatSeries+5; i++ {
		m.seriesOf(fmt.Sprintf("d.k_%d", i)).total.Add(1)
	}
	got := scrape(t, m)
	wantSamples(t, got, map[string]float64{
		`ratelimit_service_rate_limit_total_hits{domain="d",key1="_other"}`: 5,
		`ratelimit_service_rate_limit_total_hits{domain="d",key1="k_0"}`:    1,
	})
}

// sanitizeStatName skips its IPv4 expression where no three dots sit between digits: every
// string of up to 6 bytes of the characters that matter is sanitized as by the expression and
// the replacer alone, and so are the statLabels of each, as by a split.
func TestSanitizeStatNameShortcut(t *testing.T) {
	full := func(s string) string {
		return ipv4.ReplaceAllStringFunc(statNameReplacer.Replace(s), func(ip string) string { return strings.ReplaceAll(ip, ".", "_") })
	}
	split := func(key string) [4]string {
		p := append(strings.SplitN(key, ".", 4), "", "", "")
		deep := fmt.Sprint(strings.Count(key, ".") >= 2)
		return [4]string{p[0], p[1], p[2], deep}
	}
	const alphabet = "19.:|a"
	var walk func(s string, n int)
	walk = func(s string, n int) {
		if got, want := sanitizeStatName(s), full(s); got != want {
			t.Fatalf("sanitizeStatName(%q) = %q, want %q", s, got, want)
		}
		d, k1, k2, deep := statLabels(s)
		if got, want := [4]string{d, k1, k2, fmt.Sprint(deep)}, split(s); got != want {
			t.Fatalf("statLabels(%q) = %q, want %q", s, got, want)
		}
		for i := 0; n > 0 && i < len(alphabet); i++ {
			walk(s+alphabet[i:i+1], n-1)
		}
	}
	walk("", 6)
	for _, s := range []string{"edge.remote_address_10.0.0.1", "d.k_1.2.3.4.x", "d.k_1.2.3", "d.k_127.0.0.1:80|x"} {
		if got, want := sanitizeStatName(s), full(s); got != want {
			t.Errorf("sanitizeStatName(%q) = %q, want %q", s, got, want)
		}
	}
}
