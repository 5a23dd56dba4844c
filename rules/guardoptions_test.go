package rules

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// failModesDoc has a rule of each fail mode: open by default, closed for searches.
const failModesDoc = `version: "1"
rules:
  - name: api
    key: ip
    policies: [{name: per-minute, limit: 2, window: 1m}]
  - name: search
    match: {pattern: "GET /search/{q}"}
    key: ip
    fail: closed
    policies: [{name: search, limit: 2, window: 1m}]
`

// quiet is the engine options of the tests that do not read the log.
func quiet() Option { return WithLogger(slog.New(slog.DiscardHandler)) }

// TestRuleFailModes: while the store is down, a rule's requests proceed unlimited (fail: open,
// the default) or are refused 503 (fail: closed), whatever the engine's other guard options
// and with its Response or without: a rule of fail: closed gets the engine's Response with
// FailClosed set, one Response (the core refuses two).
func TestRuleFailModes(t *testing.T) {
	set, err := Parse("limits.yaml", []byte(failModesDoc))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		opts []Option
		body string // the content type of the 503
	}{
		"no Response":           {nil, "text/plain; charset=utf-8"},
		"Response{ProblemJSON}": {[]Option{WithResponse(ratelimit.Response{ProblemJSON: true, NoXRateLimit: true})}, "application/problem+json"},
	} {
		e, err := NewEngine(downStore{}, set, append([]Option{quiet(), WithGuardOptions(ratelimit.WithTimeout(time.Second),
			ratelimit.WithErrorHandler(func(ratelimit.Request, error) {}))}, c.opts...)...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if code := serve(e, "GET", "/items/1", "", "").Code; code != http.StatusOK {
			t.Errorf("%s: fail: open, the store down: %d, want 200", name, code)
		}
		w := serve(e, "GET", "/search/go", "", "")
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || w.Header().Get("Content-Type") != c.body {
			t.Errorf("%s: fail: closed, the store down: %d, Retry-After %q, %q; want 503, 1, %q", name, w.Code,
				w.Header().Get("Retry-After"), w.Header().Get("Content-Type"), c.body)
		}
	}
}

// TestGuardOptionsFailClosedRefused: the fail mode is each rule's, and no engine option may
// close a rule that says fail: open, so ratelimit.WithResponse in WithGuardOptions (whose
// Response holds FailClosed) and a rules.WithResponse whose FailClosed is set are refused by
// NewEngine and Open with an error that says where the fail mode goes (issue: FailClosed was
// taken there, and the rules of fail: open answered 503 while the store was down).
func TestGuardOptionsFailClosedRefused(t *testing.T) {
	set, err := Parse("limits.yaml", []byte(failModesDoc))
	if err != nil {
		t.Fatal(err)
	}
	none, err := Parse("limits.yaml", []byte("allow_empty: true\nrules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "FailClosed") || !strings.Contains(err.Error(), "fail: closed") {
			t.Errorf("%s: %v; want FailClosed refused, naming fail: closed", what, err)
		}
	}
	closed := func(status int) ratelimit.Option {
		return ratelimit.WithResponse(ratelimit.Response{FailClosed: status})
	}
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		_, err := NewEngine(downStore{}, set, quiet(), WithGuardOptions(ratelimit.WithTimeout(time.Second), closed(status)))
		check("NewEngine with WithGuardOptions(WithResponse(Response{FailClosed: "+http.StatusText(status)+"}))", err)
		_, err = NewEngine(downStore{}, set, quiet(), WithResponse(ratelimit.Response{IETFDraft: 11, FailClosed: status}))
		check("NewEngine with rules.WithResponse(Response{FailClosed: "+http.StatusText(status)+"})", err)
	}
	// Without FailClosed too: the Response goes by rules.WithResponse, merged with each rule's.
	_, err = NewEngine(downStore{}, set, quiet(), WithGuardOptions(ratelimit.WithResponse(ratelimit.Response{IETFDraft: 11})))
	if err == nil || !strings.Contains(err.Error(), "rules.WithResponse") {
		t.Errorf("NewEngine with WithGuardOptions(WithResponse(...)): %v; want it refused, naming rules.WithResponse", err)
	}
	_, err = NewEngine(downStore{}, none, quiet(), WithGuardOptions(closed(http.StatusServiceUnavailable)))
	check("NewEngine of no rules with FailClosed", err)
	slots, err := Parse("limits.yaml", []byte("rules:\n  - {name: api, key: ip, policies: [{name: slots, algorithm: in_flight, limit: 5, window: 1m}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewEngine(ratelimit.NewMemoryStore(), slots, quiet(), WithGuardOptions(ratelimit.WaitForSlot(time.Second), closed(http.StatusServiceUnavailable)))
	check("NewEngine of an in-flight rule with WaitForSlot and FailClosed", err)
	_, err = Open(downStore{}, readmeRulesFile(t), quiet(), byPlan(), WithGuardOptions(closed(http.StatusServiceUnavailable)))
	check("Open of the README's rules with FailClosed", err)
}

// TestGuardOptionsARuleSetsRefused: a rule's policies, cost and key are its own, and
// WithGuardOptions(WithPolicies/WithCost/WithKey) is refused by NewEngine, naming the rule's
// field to set instead (issue: they were taken and silently changed nothing, the rule's own
// coming after them).
func TestGuardOptionsARuleSetsRefused(t *testing.T) {
	set, err := Parse("limits.yaml", []byte(failModesDoc))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		opt   ratelimit.Option
		field string
	}{
		"WithPolicies": {ratelimit.WithPolicies(ratelimit.Policy{Name: "code", Limit: 1000, Window: time.Minute}), "rule's policies field"},
		"WithCost":     {ratelimit.WithCost(func(ratelimit.Request) int64 { return 3 }), "rule's cost field"},
		"WithKey":      {ratelimit.WithKey(ratelimit.KeyByIP()), "rule's key field"},
	} {
		_, err := NewEngine(ratelimit.NewMemoryStore(), set, quiet(), WithGuardOptions(ratelimit.WithTimeout(time.Second), c.opt))
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("NewEngine with %s: %v; want it refused, naming it and the %s", name, err, c.field)
		}
	}
}

// TestGuardOptionsAddUp: WithGuardOptions given twice gives the guards the options of both,
// and TrustProxies in each, for the same header, trusts the proxies of both.
func TestGuardOptionsAddUp(t *testing.T) {
	e, _ := engineFor(t, []byte("version: v1\nrules:\n  - {name: api, key: ip, policies: [{name: m, limit: 1, window: 1m}]}\n"),
		WithGuardOptions(ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8")),
		WithGuardOptions(ratelimit.TrustProxies("X-Forwarded-For", "2001:db8::/32")), WithResponse(ratelimit.Response{NoXRateLimit: true, IETFDraft: 11}))
	h := ratelimit.FromGuard(e.Guard())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, c := range [][2]string{{"10.0.0.1:1000", "198.51.100.1"}, {"10.0.0.1:1000", "198.51.100.2"},
		{"[2001:db8::1]:1000", "198.51.100.3"}, {"[2001:db8::1]:1000", "198.51.100.4"}} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c[0]
		r.Header.Set("X-Forwarded-For", c[1])
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Header().Get("RateLimit-Policy") == "" {
			t.Errorf("client %s behind %s: %d, RateLimit-Policy %q; want 200 with the IETF fields", c[1], c[0], w.Code, w.Header().Get("RateLimit-Policy"))
		}
	}
}

// TestGuardOptionsChoosingPoliciesRefused: WithResolver chooses a request's policies (by tier
// or from Resolve) in place of its rule's, and no option can undo it: NewEngine refuses either
// kind, naming it and what to write instead.
func TestGuardOptionsChoosingPoliciesRefused(t *testing.T) {
	set, err := Parse("limits.yaml", []byte(failModesDoc))
	if err != nil {
		t.Fatal(err)
	}
	tiers := ratelimit.WithResolver(ratelimit.Resolver{Tier: func(r ratelimit.Request) string { return r.Header("X-Plan") }, Tiers: map[string][]ratelimit.Policy{"pro": {{Name: "pro", Limit: 1000, Window: time.Minute}}}})
	resolver := ratelimit.WithResolver(ratelimit.Resolver{Resolve: func(ratelimit.Request, string) ([]ratelimit.Policy, error) {
		return []ratelimit.Policy{{Name: "db", Limit: 1000, Window: time.Minute}}, nil
	}})
	for name, opt := range map[string]ratelimit.Option{"Resolver{Tier, Tiers}": tiers, "Resolver{Resolve}": resolver} {
		_, err := NewEngine(ratelimit.NewMemoryStore(), set, quiet(), WithGuardOptions(ratelimit.WithTimeout(time.Second), opt))
		if err == nil || !strings.Contains(err.Error(), "WithResolver") || !strings.Contains(err.Error(), "tier:") || !strings.Contains(err.Error(), "rules file") {
			t.Errorf("NewEngine with WithResolver(%s): %v; want it refused, naming it, the rules file and tier:", name, err)
		}
	}
}

// TestGuardOptionsThatFit: the guard options that do not decide what a rule decides are taken,
// and NewEngine runs none of their functions to find out.
func TestGuardOptionsThatFit(t *testing.T) {
	set, err := Parse("limits.yaml", []byte(`version: "1"
rules:
  - name: api
    key: api_key
    policies:
      - {name: per-minute, limit: 100, window: 1m}
      - {name: slots, algorithm: in_flight, limit: 10, window: 1m}
`))
	if err != nil {
		t.Fatal(err)
	}
	called := ""
	calls := func(name string) { called += " " + name }
	_, err = NewEngine(ratelimit.NewMemoryStore(), set, quiet(), WithGuardOptions(
		ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8"), ratelimit.IPv6Prefix(56),
		ratelimit.WithTimeout(time.Second),
		ratelimit.WithAccess(ratelimit.Access{MissingKey: http.StatusUnauthorized}), ratelimit.WaitForSlot(time.Second),
		ratelimit.WithErrorHandler(func(ratelimit.Request, error) { calls("WithErrorHandler") }),
		ratelimit.WithAccess(ratelimit.Access{Skip: func(ratelimit.Request) bool { calls("Skip"); return false }}),
		ratelimit.CountIf(func(int) bool { calls("CountIf"); return true }),
	), WithResponse(ratelimit.Response{NoXRateLimit: true, IETFDraft: 11, ProblemJSON: true,
		InFlightStatus: http.StatusServiceUnavailable,
		Deny: func(ratelimit.Request, ratelimit.Decision) (int, string, []byte) {
			calls("Response.Deny")
			return 429, "", nil
		}}))
	if err != nil {
		t.Errorf("NewEngine with guard options that fit: %v", err)
	}
	if called != "" {
		t.Errorf("NewEngine called the functions of%s", called)
	}
}

// TestGuardOptionsTwiceAcrossCallsNamed: WithGuardOptions given twice adds up, so a default
// list with an override in a second WithGuardOptions (WithTimeout in both) holds an option
// twice, which the core refuses. NewEngine says so of the guard options, and says nothing of a
// rule: the error named the rules file's first rule ("rule \"api\": ... WithTimeout given
// twice"), sending the reader to a rule that had no part in it.
func TestGuardOptionsTwiceAcrossCallsNamed(t *testing.T) {
	set, err := Parse("limits.yaml", []byte("version: v1\nrules:\n  - {name: api, key: ip, policies: [{name: m, limit: 1, window: 1m}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	defaults := []ratelimit.Option{ratelimit.WithTimeout(100 * time.Millisecond), ratelimit.IPv6Prefix(56)}
	_, err = NewEngine(ratelimit.NewMemoryStore(), set, quiet(), WithGuardOptions(defaults...), WithGuardOptions(ratelimit.WithTimeout(time.Second)))
	if err == nil || !strings.Contains(err.Error(), "WithGuardOptions") || !strings.Contains(err.Error(), "WithTimeout given twice") ||
		strings.Contains(err.Error(), `rule "api"`) {
		t.Errorf("NewEngine with WithTimeout in two WithGuardOptions: %v; want it refused as the guard options', naming WithTimeout, no rule", err)
	}
	// An option invalid alone is refused as before, by the guard of each rule.
	_, err = NewEngine(ratelimit.NewMemoryStore(), set, quiet(), WithGuardOptions(ratelimit.WithTimeout(0)))
	if err == nil || !strings.Contains(err.Error(), "WithTimeout(0s)") {
		t.Errorf("NewEngine with WithTimeout(0): %v; want it refused", err)
	}
}
