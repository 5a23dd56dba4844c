package rules

import (
	"bytes"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// TestEmptyRulesMustBeSaid: a document without rules, which would stop limiting everywhere,
// is refused by Parse (so by Open, validate, push and both watchers) unless it says so with
// allow_empty: true; push refused "rules: []" while WatchFile applied it at INFO and validate
// said ok. allow_empty beside rules is refused too: it would let a later accident through.
func TestEmptyRulesMustBeSaid(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"limits.yaml", "version: \"7\"\nrules: []\n", `limits.yaml:2: rules: no rules: every request would go unlimited; write allow_empty: true at the top of the document if that is meant`},
		{"limits.json", `{"version": "7", "rules": []}`, `limits.json:1: rules: no rules: every request would go unlimited`},
		{"limits.yaml", "version: \"7\"\nallow_empty: false\nrules: []\n", `limits.yaml:3: rules: no rules`},
		{"limits.yaml", "version: \"7\"\nallow_empty: yes\nrules: []\n", `limits.yaml:2: allow_empty: want true or false, got "yes"`},
		{"limits.yaml", "version: \"7\"\nallow_empty: true\nrules:\n  - {name: a, key: ip, policies: [{limit: 1, window: 1s}]}\n", `limits.yaml:2: allow_empty: true, but the document has 1 rule; remove allow_empty`},
		// allow_empty: true without a rules field says what to write (it said "rules: required").
		{"limits.yaml", "version: \"7\"\nallow_empty: true\n", `limits.yaml:1: rules: required; write rules: [] beside allow_empty: true for a document without rules`},
	} {
		_, err := Parse(tc.name, []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want an error containing %q", tc.doc, err, tc.want)
		}
		if strings.Contains(tc.want, "no rules") && !errors.Is(err, ErrEmptyRules) {
			t.Errorf("%q: %v is not ErrEmptyRules", tc.doc, err)
		}
	}
	for _, doc := range []string{"version: \"7\"\nallow_empty: true\nrules: []\n", `{"version": "7", "allow_empty": true, "rules": []}`} {
		if set, err := Parse("limits", []byte(doc)); err != nil || len(set.Rules()) != 0 {
			t.Errorf("%q: %v; want a Set without rules", doc, err)
		}
	}

	// Open reads a file as Parse does, and says at warning level that it limits nothing.
	dir := t.TempDir()
	empty, meant := filepath.Join(dir, "empty.yaml"), filepath.Join(dir, "meant.yaml")
	replaceFile(t, empty, []byte("version: \"7\"\nrules: []\n"))
	replaceFile(t, meant, []byte("version: \"8\"\nallow_empty: true\nrules: []\n"))
	var logged lockedBuffer
	logger := WithLogger(slog.New(slog.NewTextHandler(&logged, nil)))
	if _, err := Open(ratelimit.NewMemoryStore(), empty, logger); !errors.Is(err, ErrEmptyRules) {
		t.Errorf("Open of a file without rules: %v; want ErrEmptyRules", err)
	}
	if e, err := Open(ratelimit.NewMemoryStore(), meant, logger); err != nil || e.Version() != "8" {
		t.Errorf("Open of a file without rules that says allow_empty: true: %v", err)
	}
	if !strings.Contains(logged.String(), `level=WARN msg="ratelimit rules applied without any rules (allow_empty: true): no request is limited" version=8 rules=0`) {
		t.Errorf("Open of no rules logged:\n%s\nwant a warning", logged.String())
	}
}

// TestEmptyRulesAppliedLoudly: rules without any, said so, are applied at warning level by
// Open and the file watcher, and an empty file not said so is rejected there as anywhere.
func TestEmptyRulesAppliedLoudly(t *testing.T) {
	var logged lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	e, rep, path := watchedLogging(t, limitsDoc("v1", 2, 5), logger)
	replaceFile(t, path, []byte("version: v2\nrules: []\n"))
	if ev := rep.next(t); !strings.HasPrefix(ev, "rejected ") || !strings.Contains(ev, "allow_empty: true") || e.Version() != "v1" {
		t.Fatalf("an empty file: %q, version %q; want it rejected, v1 kept", ev, e.Version())
	}
	replaceFile(t, path, []byte("version: v3\nallow_empty: true\nrules: []\n"))
	if ev := rep.next(t); ev != "applied v3" {
		t.Fatalf("an empty file with allow_empty: true: %q; want v3 applied", ev)
	}
	if !strings.Contains(logged.String(), `level=WARN msg="ratelimit rules applied without any rules (allow_empty: true): no request is limited" version=v3 rules=0`) {
		t.Errorf("applying no rules logged:\n%s\nwant a warning", logged.String())
	}
	// And told to the Reporter, for metrics: the prometheus and otel observers' gauges. The
	// engine tells RulesEmpty after RulesApplied, which is what rep.next heard: wait for it
	// (read at once, it had not come yet 1 run in 30 under -race).
	want := []string{"v1 false", "v3 true"}
	got := rep.emptyReports()
	for deadline := time.Now().Add(30 * time.Second); !slices.Equal(got, want) && len(got) < len(want) && time.Now().Before(deadline); got = rep.emptyReports() {
		time.Sleep(time.Millisecond)
	}
	if !slices.Equal(got, want) {
		t.Errorf("RulesEmpty was told %q; want %q", got, want)
	}
}

// TestEmptyRulesFromRedis: the Redis watcher refuses a stored document without rules that
// does not say allow_empty (stored by hand, or by a push before this rule), and applies one
// that does at warning level, recording in the fleet that the instance limits nothing.
func TestEmptyRulesFromRedis(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	if _, err := Push(t.Context(), client, key, "limits.yaml", limitsDoc("v1", 2, 5)); err != nil {
		t.Fatal(err)
	}
	var logged lockedBuffer
	rep, subscribed := newReporter(), make(chan struct{}, 1)
	e, err := OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key, WithReporter(rep), WithInstanceName("api-1"),
		WithLogger(slog.New(slog.NewTextHandler(&logged, nil))), byPlan(), WithPollInterval(time.Hour), signal(subscribed))
	if err != nil {
		t.Fatal(err)
	}
	rep.next(t) // v1
	watching(t, e, client, key, subscribed)

	if err := client.HSet(t.Context(), key, "version", "v2", "document", "version: v2\nrules: []\n").Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.Publish(t.Context(), key, "v2").Err(); err != nil {
		t.Fatal(err)
	}
	if ev := rep.next(t); !strings.HasPrefix(ev, "rejected ") || !strings.Contains(ev, "allow_empty: true") || e.Version() != "v1" {
		t.Fatalf("an empty stored document: %q, version %q; want it rejected, v1 kept", ev, e.Version())
	}
	if _, err := Push(t.Context(), client, key, "limits.yaml", []byte("version: v3\nallow_empty: true\nrules: []\n")); err != nil {
		t.Fatal(err)
	}
	if ev := rep.next(t); ev != "applied v3" {
		t.Fatalf("a pushed document with allow_empty: true: %q; want v3 applied", ev)
	}
	if !bytes.Contains([]byte(logged.String()), []byte(`level=WARN msg="ratelimit rules applied without any rules (allow_empty: true): no request is limited" version=v3`)) {
		t.Errorf("applying no rules logged:\n%s\nwant a warning", logged.String())
	}
	fleet := waitFleet(t, client, key, "api-1 to run v3", func(f []Instance) bool { return len(f) == 1 && f[0].Running == "v3" })
	if !fleet[0].Empty {
		t.Errorf("the fleet: %+v; want api-1 running v3, recorded Empty", fleet)
	}
}
