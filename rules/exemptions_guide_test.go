package rules

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// The rules of docs/exemptions.md, as written, behind the engine: acme 10 a minute on
// /export and 600 elsewhere, monitor unlimited, everyone else 60; the networks and the revoked
// key; and what ClientLimits (ratelimit inspect) says of acme on export.
func TestExemptionsGuideRules(t *testing.T) {
	doc := readmetest.Block(t, "../docs/exemptions.md", "## In the rules file", "yaml")
	set, err := Parse("limits.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if w := set.Warnings(); len(w) != 0 {
		t.Errorf("the guide's rules have warnings: %v", w)
	}
	e, err := NewEngine(ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0))), set)
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.FromGuard(e.Guard())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, c := range []struct {
		path, key, peer string
		n, want         int
	}{
		{"/export", "acme", "192.0.2.1:1", 20, 10},
		{"/items", "acme", "192.0.2.1:1", 700, 600},
		{"/export", "someone", "192.0.2.1:1", 70, 60},
		{"/items", "someone", "192.0.2.1:1", 70, 60},
		{"/export", "monitor", "192.0.2.1:1", 100, 100},
		{"/items", "revoked-key", "192.0.2.1:1", 3, 0},
		{"/items", "someone", "10.9.9.9:1", 100, 100},
		{"/items", "monitor", "203.0.113.1:1", 3, 0},
	} {
		if got, st := admitted(t, h, c.path, c.key, c.peer, c.n); got != c.want {
			t.Errorf("%s by %q from %s: %d of %d admitted (%v); want %d", c.path, c.key, c.peer, got, c.n, st, c.want)
		}
	}
	rules := set.Rules()
	why := set.ClientLimits(&rules[0], "hdr:x-api-key:acme").Why
	guide, err := os.ReadFile("../docs/exemptions.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(why, "(line 15)") || !strings.Contains(string(guide), "(line 15)") {
		t.Errorf("ClientLimits(export, acme).Why = %q; the guide says it is at line 15", why)
	}
}
