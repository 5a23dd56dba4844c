package rules

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// reporter records what an Engine reports, and hands each event to whoever waits for it.
type reporter struct {
	mu       sync.Mutex
	applied  []string
	rejected []error
	empty    []string    // "<version> <empty>", of RulesEmpty: rules.EmptyReporter
	events   chan string // "applied <version>" or "rejected <error>"
}

var _ EmptyReporter = (*reporter)(nil)

func (r *reporter) RulesEmpty(version string, empty bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.empty = append(r.empty, fmt.Sprint(version, " ", empty))
}

// emptyReports returns what RulesEmpty was told, in order.
func (r *reporter) emptyReports() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.empty)
}

func newReporter() *reporter { return &reporter{events: make(chan string, 100)} }

func (r *reporter) RulesApplied(version string) {
	r.mu.Lock()
	r.applied = append(r.applied, version)
	r.mu.Unlock()
	r.events <- "applied " + version
}

func (r *reporter) RulesRejected(err error) {
	r.mu.Lock()
	r.rejected = append(r.rejected, err)
	r.mu.Unlock()
	r.events <- "rejected " + err.Error()
}

// next returns the next event, failing the test when none comes in a long while: an event the
// code under test owes, not a deadline it must meet.
func (r *reporter) next(t *testing.T) string {
	t.Helper()
	select {
	case ev := <-r.events:
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no rules event in 30 s")
		return ""
	}
}

// limitsDoc is a rules document of one rule "api" keyed by API key, whose policy "per-minute" is a
// fixed window of limit per minute, and a rule for the "pro" tier.
func limitsDoc(version string, limit, proLimit int) []byte {
	return []byte(strings.NewReplacer("VERSION", version, "LIMIT", strconv.Itoa(limit), "PRO", strconv.Itoa(proLimit)).Replace(`version: "VERSION"
rules:
  - name: api
    key: api_key
    policies:
      - {name: per-minute, algorithm: fixed_window, limit: LIMIT, window: 1m}
  - name: api-pro
    key: api_key
    tier: pro
    policies:
      - {name: per-minute, algorithm: fixed_window, limit: PRO, window: 1m}
  - name: search
    match: {pattern: "GET /search/{q}"}
    key: [api_key, route]
    cost: 2
    policies:
      - {name: search, algorithm: fixed_window, limit: 4, window: 1m}
`))
}

// engineFor returns an engine over a memory store on a fake clock, applying document data,
// that logs nowhere.
func engineFor(t *testing.T, data []byte, opts ...Option) (*Engine, *reporter) {
	t.Helper()
	return engineLogging(t, data, slog.New(slog.DiscardHandler), opts...)
}

// engineLogging is engineFor logging to logger.
func engineLogging(t *testing.T, data []byte, logger *slog.Logger, opts ...Option) (*Engine, *reporter) {
	t.Helper()
	set, err := Parse("limits.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	rep := newReporter()
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(time.Unix(1_800_000_000, 0))))
	opts = append([]Option{WithReporter(rep), WithLogger(logger), byPlan()}, opts...)
	e, err := NewEngine(store, set, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if ev := rep.next(t); ev != "applied "+set.Version() {
		t.Fatalf("NewEngine reported %q", ev)
	}
	return e, rep
}

// serve sends a request through the engine's guard and returns the response.
func serve(e *Engine, method, target, apiKey, plan string) *httptest.ResponseRecorder {
	h := ratelimit.FromGuard(e.Guard())(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	r := httptest.NewRequest(method, target, nil)
	if apiKey != "" {
		r.Header.Set("X-API-Key", apiKey)
	}
	if plan != "" {
		r.Header.Set("X-Plan", plan)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestEngine: each request is checked under the rule that matches it — its tier, its pattern,
// its cost — and a request no rule matches is not limited.
func TestEngine(t *testing.T) {
	e, _ := engineFor(t, []byte(`rules:
  - name: api
    key: api_key
    policies: [{name: per-minute, algorithm: fixed_window, limit: 2, window: 1m}]
  - name: api-pro
    key: api_key
    tier: pro
    policies: [{name: per-minute-pro, algorithm: fixed_window, limit: 5, window: 1m}]
  - name: search
    match: {pattern: "GET /search/{q}"}
    key: [api_key, route]
    cost: 2
    fail: closed
    policies: [{name: search, algorithm: fixed_window, limit: 4, window: 1m}]
  - name: admin
    match: {pattern: "admin.example/"}
    key: ip
    policies: [{name: admin, algorithm: fixed_window, limit: 1, window: 1m}]
`))
	for _, c := range []struct {
		method, target, key, plan string
		status                    int
		limit, remaining          string
	}{
		{"GET", "/items/1", "a", "", 200, "2", "1"},
		{"GET", "/items/1", "a", "", 200, "2", "0"},
		{"GET", "/items/1", "a", "", 429, "2", "0"},
		{"GET", "/items/1", "b", "pro", 200, "5", "4"},
		{"GET", "/items/1", "b", "gold", 200, "2", "1"}, // no rule of its tier: the rule for every tier
		{"GET", "/search/go", "a", "", 200, "4", "2"},   // cost 2
		{"GET", "/search/rust", "a", "", 200, "4", "0"}, // the same route
		{"GET", "/search/zig", "a", "", 429, "4", "0"},
		{"GET", "http://admin.example/x", "", "", 200, "1", "0"}, // by host
		{"GET", "http://admin.example/y", "", "", 429, "1", "0"},
	} {
		w := serve(e, c.method, c.target, c.key, c.plan)
		if w.Code != c.status || w.Header().Get("X-RateLimit-Limit") != c.limit || w.Header().Get("X-RateLimit-Remaining") != c.remaining {
			t.Errorf("%s %s key %q plan %q: %d limit %q remaining %q; want %d, %s, %s", c.method, c.target, c.key, c.plan,
				w.Code, w.Header().Get("X-RateLimit-Limit"), w.Header().Get("X-RateLimit-Remaining"), c.status, c.limit, c.remaining)
		}
	}
}

// TestEngineUnmatched: a request no rule matches proceeds without headers.
func TestEngineUnmatched(t *testing.T) {
	e, _ := engineFor(t, []byte(`rules:
  - name: search
    match: {pattern: "GET /search/{q}"}
    key: ip
    policies: [{limit: 1, window: 1m}]
`))
	for range 3 {
		if w := serve(e, "GET", "/items/1", "", ""); w.Code != 200 || len(w.Header()) != 0 {
			t.Fatalf("unmatched: %d %v, want 200 without headers", w.Code, w.Header())
		}
	}
}

// TestEngineMatchesTheEscapedPath: a rule's pattern applies to every request the application's
// ServeMux routes to that pattern. ServeMux matches the escaped path, so "/search/x%2Fy" is
// served by "GET /search/{q}" (q = "x/y"); the engine matched the decoded path,
// "/search/x/y", which no pattern matches, and the client whose search quota was spent was
// served again, unlimited, by escaping a slash (and "/search/..%2Fadmin" was matched as
// "/admin"). The engine now matches the escaped path, which the core's net/http requests (and
// Echo's) tell it (EscapedPath). Echo routes on the escaped path too.
func TestEngineMatchesTheEscapedPath(t *testing.T) {
	e, _ := engineFor(t, []byte(`rules:
  - name: search
    match: {pattern: "GET /search/{q}"}
    key: ip
    policies: [{name: search, algorithm: fixed_window, limit: 1, window: 1m}]
`))
	mux := http.NewServeMux()
	var served []string
	mux.HandleFunc("GET /search/{q}", func(w http.ResponseWriter, r *http.Request) { served = append(served, r.PathValue("q")) })
	h := ratelimit.FromGuard(e.Guard())(mux)
	var got []int
	for _, target := range []string{"/search/a", "/search/a", "/search/x%2Fy", "/search/..%2Fadmin"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		got = append(got, w.Code)
	}
	if want := []int{200, 429, 429, 429}; !slices.Equal(got, want) {
		t.Errorf("one client's searches: %v, want %v (the searches served: %q)", got, want, served)
	}
}

// TestEngineKeepsLastGood: a Set whose rule cannot make a guard is refused with the rule's
// name, reported, and the rules in use stay.
func TestEngineKeepsLastGood(t *testing.T) {
	e, rep := engineFor(t, limitsDoc("v1", 2, 5), WithGuardOptions(ratelimit.CountIf(func(int) bool { return true })))
	shaping, err := Parse("shaping.yaml", []byte(`version: v2
rules:
  - name: queue
    key: ip
    policies: [{name: queue, algorithm: leaky_bucket_shaping, limit: 5, window: 1s}]
`))
	if err != nil {
		t.Fatal(err)
	}
	err = e.Apply(shaping)
	if err == nil || !strings.Contains(err.Error(), `rules: version v2, rule "queue": `) || !strings.Contains(err.Error(), "CountIf cannot be combined") {
		t.Errorf("Apply: %v, want the rule's error", err)
	}
	if ev := rep.next(t); !strings.HasPrefix(ev, "rejected ") {
		t.Errorf("reported %q, want the rejection", ev)
	}
	if v := e.Version(); v != "v1" {
		t.Errorf("version %q in use, want the last good v1", v)
	}
	if w := serve(e, "GET", "/", "a", ""); w.Header().Get("X-RateLimit-Limit") != "2" {
		t.Errorf("after the refused Set: limit %q, want v1's 2", w.Header().Get("X-RateLimit-Limit"))
	}
	if err := e.Apply(nil); err == nil {
		t.Error("Apply(nil) succeeded")
	}
}

// TestEngineLogsVersions: the version in use shows in the logs, with the source and the one
// it replaced; a refused document's errors too.
func TestEngineLogsVersions(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{&mu, &buf}, nil))
	e, _ := engineLogging(t, limitsDoc("v1", 2, 5), logger)
	v2, _ := Parse("limits.yaml", limitsDoc("v2", 3, 5))
	if err := e.Apply(v2); err != nil {
		t.Fatal(err)
	}
	_ = e.apply(nil, "limits.yaml")
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{
		`msg="ratelimit rules applied" version=v1 rules=3 source=NewEngine`,
		`msg="ratelimit rules applied" version=v2 rules=3 source=Apply previous=v1`,
		`msg="ratelimit rules rejected; the last good rules stay in use" source=limits.yaml version=v2 error="rules: Apply(nil)"`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, buf.String())
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestNewEngineErrors(t *testing.T) {
	set, _ := Parse("a.yaml", limitsDoc("v1", 1, 1))
	if _, err := NewEngine(nil, set); err == nil {
		t.Error("NewEngine without a store succeeded")
	}
	if _, err := NewEngine(ratelimit.NewMemoryStore(), nil); err == nil {
		t.Error("NewEngine without a Set succeeded")
	}
	_, err := NewEngine(ratelimit.NewMemoryStore(), set, byPlan(), WithGuardOptions(ratelimit.WithTimeout(-1)))
	if err == nil || !strings.Contains(err.Error(), `rules: version v1, rule "api": ratelimit: NewGuard: WithTimeout`) {
		t.Errorf("NewEngine with a bad guard option: %v, want the rule's error", err)
	}
}

// TestEngineChangeKeepsCount: a new version whose policy keeps its name, algorithm and window
// keeps each client's count: a raised limit does not hand out a fresh quota, a lowered one does
// not forgive what was used.
func TestEngineChangeKeepsCount(t *testing.T) {
	e, _ := engineFor(t, limitsDoc("v1", 2, 5))
	apply := func(version string, limit int) {
		t.Helper()
		set, err := Parse("limits.yaml", limitsDoc(version, limit, 5))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Apply(set); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		apply     string
		limit     int
		status    int
		remaining string
	}{
		{"", 0, 200, "1"}, {"", 0, 200, "0"}, {"", 0, 429, "0"}, // 2 of 2
		{"v2", 4, 200, "1"}, {"", 0, 200, "0"}, {"", 0, 429, "0"}, // raised to 4: 2 more, not 4
		{"v3", 1, 429, "0"}, // lowered to 1: 4 used, refused
	}
	for i, s := range steps {
		if s.apply != "" {
			apply(s.apply, s.limit)
		}
		w := serve(e, "GET", "/", "a", "")
		if w.Code != s.status || w.Header().Get("X-RateLimit-Remaining") != s.remaining {
			t.Errorf("step %d (version %s): %d remaining %q; want %d, %s", i, e.Version(), w.Code, w.Header().Get("X-RateLimit-Remaining"), s.status, s.remaining)
		}
	}
}
