package rules

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
)

// readmeRulesFile writes the rules file of docs/rules.md, as written, and returns its path.
func readmeRulesFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(path, readmeRules(t), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadmeRulesNeedWithTier: the README's rules file, every rule of which has a tier, opened
// without WithTier is refused, naming its rules and WithTier: an engine that names no tier
// can never apply them (issue: it applied them, logged "rules applied", and let every request
// through unlimited).
func TestReadmeRulesNeedWithTier(t *testing.T) {
	_, err := Open(ratelimit.NewMemoryStore(), readmeRulesFile(t))
	if err == nil {
		t.Fatal("rules.Open of the README's rules file without WithTier succeeded: its rules would never apply")
	}
	for _, want := range []string{`"free"`, `"search-free"`, "WithTier"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("rules.Open without WithTier: %v; want it to name %s", err, want)
		}
	}
}

// TestTieredVersionRejectedWithoutWithTier: a new version with a tiered rule, for an engine
// without WithTier, is rejected as an invalid document is — logged as an error and told to
// the Reporter (ratelimit_rules_loads_total{result="rejected"}) — and the rules in use stay.
// An engine whose tier function names no tier (tiers are "" on purpose) applies it.
func TestTieredVersionRejectedWithoutWithTier(t *testing.T) {
	v1, err := Parse("limits.yaml", []byte("version: v1\nrules:\n  - {name: api, key: ip, policies: [{limit: 5, window: 1m}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := Parse("limits.yaml", limitsDoc("v2", 2, 5)) // its rule api-pro has the tier pro
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	rep := newReporter()
	e, err := NewEngine(ratelimit.NewMemoryStore(), v1, WithReporter(rep), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	rep.next(t) // v1 applied
	if err := e.Apply(v2); err == nil || !strings.Contains(err.Error(), `"api-pro"`) {
		t.Errorf("Apply of a version with a tiered rule, without WithTier: %v; want the rule named", err)
	}
	if ev := rep.next(t); !strings.HasPrefix(ev, "rejected ") {
		t.Errorf("reported %q, want the rejection", ev)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || e.Version() != "v1" {
		t.Errorf("version %s in use, log:\n%s\nwant v1 and an error line", e.Version(), logs.String())
	}
	if _, err := NewEngine(ratelimit.NewMemoryStore(), v2, WithLogger(slog.New(slog.DiscardHandler)),
		WithTier(func(ratelimit.Request) string { return "" })); err != nil {
		t.Errorf("NewEngine with a tier function: %v", err)
	}
}

// TestUnknownTierLogged: a request of a tier that no rule has (a plan the rules forgot, a
// misspelt name) gets only the rules without a tier — under the README's rules, none: it is
// not limited. Each such tier is logged once per version applied, the first 16 of them, then
// one line says that more are not logged, and no more are kept; a known tier and no tier are
// not logged.
func TestUnknownTierLogged(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	e, err := Open(ratelimit.NewMemoryStore(), readmeRulesFile(t),
		WithTier(func(r ratelimit.Request) string { return r.Header("X-Plan") }),
		WithLogger(slog.New(slog.NewTextHandler(&lockedWriter{&mu, &logs}, nil))))
	if err != nil {
		t.Fatal(err)
	}
	for _, plan := range []string{"free", "", "Free", "Free", "free", "Free"} {
		serve(e, "GET", "/", "k", plan)
	}
	for i := range 40 {
		serve(e, "GET", "/", "k", "plan-"+strings.Repeat("x", i))
	}
	mu.Lock()
	defer mu.Unlock()
	text := logs.String()
	const unknown = `level=WARN msg="ratelimit rules: no rule has the tier of a request; it gets the rules without a tier"`
	if n := strings.Count(text, unknown+" tier=Free version=2026-11-23.1"); n != 1 {
		t.Errorf("the unknown tier Free is logged %d times, want once:\n%s", n, text)
	}
	if n := strings.Count(text, unknown); n != 16 {
		t.Errorf("%d unknown tiers logged, want the first 16:\n%s", n, text)
	}
	if n := strings.Count(text, `msg="ratelimit rules: more tiers that no rule has; not logged until the rules change"`); n != 1 {
		t.Errorf("the end of the logging said %d times, want once:\n%s", n, text)
	}
	if strings.Contains(text, "tier=free") || strings.Contains(text, `tier=""`) {
		t.Errorf("a known tier or no tier logged:\n%s", text)
	}
	mu.Unlock()
	kept := 0
	e.current.Load().unknown.logged.Range(func(any, any) bool { kept++; return true })
	if kept > maxUnknownTiers+1 {
		t.Errorf("%d unknown tiers kept after 41; want at most %d: a client must not grow the engine", kept, maxUnknownTiers+1)
	}
	v2, err := Parse("limits.yaml", bytes.Replace(readmeRules(t), []byte("2026-11-23.1"), []byte("v2"), 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(v2); err != nil {
		t.Fatal(err)
	}
	serve(e, "GET", "/", "k", "Free")
	serve(e, "GET", "/", "k", "Free")
	mu.Lock()
	if n := strings.Count(logs.String(), unknown+" tier=Free version=v2"); n != 1 {
		t.Errorf("under a new version, the unknown tier Free is logged %d times, want once again:\n%s", n, logs.String())
	}
}
