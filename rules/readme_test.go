package rules

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// readmeRules returns the rules document of README's section on rules files, as written.
func readmeRules(t *testing.T) []byte {
	t.Helper()
	return []byte(readmetest.Block(t, "../docs/rules.md", "reads the limits from a YAML or JSON file", "yaml"))
}

// The README's rules, wired as the README shows (rules.Open, then ratelimit.FromGuard of the
// engine's guard around the mux), key the search rule by API key and route: one API key from
// four addresses shares one quota across the paths of the route (issue: the middleware ran
// before the mux had routed, and every request was limited by its IP instead).
func TestReadmeRulesKeyByAPIKeyAndRoute(t *testing.T) {
	path := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(path, readmeRules(t), 0o600); err != nil {
		t.Fatal(err)
	}
	planOf := func(r ratelimit.Request) string { return r.Header("X-Plan") }
	engine, err := Open(ratelimit.NewMemoryStore(), path, WithTier(planOf))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /search/{q}", func(http.ResponseWriter, *http.Request) {})
	h := ratelimit.FromGuard(engine.Guard())(mux)
	send := func(key, ip, path string) int {
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = ip + ":1"
		r.Header.Set("X-API-Key", key)
		r.Header.Set("X-Plan", "free")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	// search-free: 50 per minute at a cost of 5 is 10 searches per API key.
	var got []int
	for i := range 11 {
		got = append(got, send("k1", fmt.Sprintf("192.0.2.%d", i%4+1), fmt.Sprintf("/search/q%d", i)))
	}
	if want := "[200 200 200 200 200 200 200 200 200 200 429]"; fmt.Sprint(got) != want {
		t.Errorf("one API key from 4 addresses over the search route: %v, want %s", got, want)
	}
	if code := send("k2", "192.0.2.1", "/search/x"); code != http.StatusOK {
		t.Errorf("another API key from an address the first used: %d, want 200 (a quota of its own)", code)
	}
}

// A rule keyed by route needs a pattern to key by: without one, validation refuses it,
// naming the file, line and field, rather than letting every request fall back to its IP.
func TestRouteKeyNeedsPattern(t *testing.T) {
	doc := "version: \"1\"\nrules:\n  - name: all\n    key: [api_key, route]\n    policies:\n      - {limit: 5, window: 1m}\n"
	_, err := Parse("limits.yaml", []byte(doc))
	if err == nil || !strings.Contains(err.Error(), "limits.yaml:4: rules[0].key[1]") || !strings.Contains(err.Error(), "match.pattern") {
		t.Fatalf("a rule keyed by route without a pattern: %v; want an error at limits.yaml:4 rules[0].key[1] naming match.pattern", err)
	}
}
