package rules

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// The overrides of issue 37: tenant acme gets 600/min, but 10/min on /export; everyone else 60.
const overridesDoc = `version: "1"
access:
  allow: [10.0.0.0/8]
  deny: [203.0.113.0/24]
rules:
  - name: export
    match: {pattern: "/export"}
    key: api_key
    policies: [{name: export-per-minute, rate: 60/min}]
  - name: api
    key: api_key
    policies: [{name: per-minute, rate: 60/min}]
overrides:
  - client: {api_key: acme}
    rule: export
    policies: [{name: export-per-minute, rate: 10/min}]
  - client: {api_key: acme}
    policies: [{name: per-minute, rate: 600/min}]
  - client: {api_key: monitor}
    unlimited: true
`

// The same document, its lists and overrides in another order.
const overridesReordered = `version: "1"
overrides:
  - client: {api_key: monitor}
    unlimited: true
  - client: {api_key: acme}
    policies: [{name: per-minute, rate: 600/min}]
  - client: {api_key: acme}
    rule: export
    policies: [{name: export-per-minute, rate: 10/min}]
rules:
  - name: export
    match: {pattern: "/export"}
    key: api_key
    policies: [{name: export-per-minute, rate: 60/min}]
  - name: api
    key: api_key
    policies: [{name: per-minute, rate: 60/min}]
access:
  deny: [203.0.113.0/24]
  allow: [10.0.0.0/8]
`

// admitted counts how many of n requests to path with key, from peer, the engine admits.
func admitted(t *testing.T, h http.Handler, path, key, peer string, n int) (ok int, statuses map[int]int) {
	t.Helper()
	statuses = map[int]int{}
	for i := 0; i < n; i++ {
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = peer
		if key != "" {
			r.Header.Set("X-API-Key", key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		statuses[w.Code]++
		if w.Code == http.StatusOK {
			ok++
		}
	}
	return ok, statuses
}

func engineOf(t *testing.T, doc string) (http.Handler, *Set) {
	t.Helper()
	set, err := Parse("limits.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0)))
	e, err := NewEngine(store, set)
	if err != nil {
		t.Fatal(err)
	}
	return ratelimit.FromGuard(e.Guard())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), set
}

// The most specific override wins, whatever the order of the file: acme 10 on /export, 600
// elsewhere; monitor unlimited; others 60; the networks allowed and denied on every route.
func TestOverridesMostSpecificWins(t *testing.T) {
	for _, doc := range []string{overridesDoc, overridesReordered} {
		h, set := engineOf(t, doc)
		for _, c := range []struct {
			path, key, peer string
			n, want         int
		}{
			{"/export", "acme", "192.0.2.1:1", 20, 10},
			{"/items", "acme", "192.0.2.1:1", 700, 600},
			{"/export", "other", "192.0.2.1:1", 70, 60},
			{"/items", "other", "192.0.2.1:1", 70, 60},
			{"/export", "monitor", "192.0.2.1:1", 200, 200},
			{"/items", "other", "10.1.2.3:1", 100, 100},  // an allowed network: unlimited, though other's quota is spent
			{"/items", "monitor", "203.0.113.9:1", 5, 0}, // a denied network: refused, whoever it is
			{"/nowhere-else", "", "203.0.113.9:1", 1, 0}, // (every path matches "api"; the unmatched guard is tested below)
		} {
			if got, st := admitted(t, h, c.path, c.key, c.peer, c.n); got != c.want {
				t.Errorf("%s by %q from %s: %d of %d admitted (%v); want %d", c.path, c.key, c.peer, got, c.n, st, c.want)
			}
		}
		if v := set.digest; v != mustDigest(t, overridesDoc) {
			t.Errorf("the reordered document's digest %s differs from %s", v, mustDigest(t, overridesDoc))
		}
	}
}

func mustDigest(t *testing.T, doc string) string {
	t.Helper()
	s, err := Parse("limits.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s.digest
}

// A request that no rule matches is still refused when its network is denied, and allowed
// (not limited) otherwise.
func TestAccessOnUnmatchedRequests(t *testing.T) {
	h, _ := engineOf(t, `
access:
  deny: [203.0.113.0/24]
rules:
  - name: login
    match: {pattern: "POST /login"}
    key: ip
    policies: [{rate: 1/min}]
`)
	if ok, st := admitted(t, h, "/public", "", "203.0.113.9:1", 3); ok != 0 || st[http.StatusForbidden] != 3 {
		t.Errorf("a denied network on a route no rule matches: %v; want 3 refused 403", st)
	}
	if ok, _ := admitted(t, h, "/public", "", "192.0.2.1:1", 3); ok != 3 {
		t.Errorf("another network on a route no rule matches: %d of 3 admitted; want 3", ok)
	}
}

// The lists' problems are refused at their lines; what changes nothing is warned of.
func TestAccessValidation(t *testing.T) {
	_, err := Parse("limits.yaml", []byte(`rules:
  - name: api
    key: api_key
    policies: [{rate: 1/s}]
access:
  allow:
    - 10.0.0.0/8
    - 10.0.0/8
    - 10.9.9.9/8
  deny_status: 200
overrides:
  - client: {api_key: acme}
    rule: nope
    unlimited: true
  - client: {ip: 1.2.3.4}
    unlimited: true
  - client: {user: "7"}
    unlimited: true
`))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse = %v; want Errors", err)
	}
	for _, want := range []string{
		"limits.yaml:8: access.allow[1]:", // not a network
		"limits.yaml:9: access.allow[2]: 10.0.0.0/8 is listed twice (first at line 7)",
		"limits.yaml:10: access.deny_status: 200 is not a 4xx or 5xx",
		`limits.yaml:13: overrides[0].rule: no rule is named "nope"`,
		`limits.yaml:15: overrides[1].client: "ip" is not a client here`,
		"limits.yaml:17: overrides[2].client: no rule is keyed by user alone",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the errors do not say %q:\n%v", want, err)
		}
	}
	set, err := Parse("limits.yaml", []byte(`rules:
  - name: api
    key: api_key
    policies: [{rate: 1/s}]
access:
  allow: [10.0.0.0/8, 10.1.0.0/16, 203.0.113.7]
  deny: [203.0.113.0/24]
  deny_clients: [{api_key: revoked}]
overrides:
  - client: {api_key: revoked}
    unlimited: true
`))
	if err != nil {
		t.Fatal(err)
	}
	w := set.Warnings().Error()
	for _, want := range []string{
		"limits.yaml:6: access.allow: 10.1.0.0/16 is inside 10.0.0.0/8 (line 6)",
		"203.0.113.7 is inside the denied 203.0.113.0/24 (line 7): deny wins",
		"limits.yaml:10: overrides: api_key=revoked is denied",
	} {
		if !strings.Contains(w, want) {
			t.Errorf("the warnings do not say %q:\n%s", want, w)
		}
	}
}

// A denied client is refused by the rules keyed by its part; its unlimited override never
// applies (deny wins).
func TestDeniedClient(t *testing.T) {
	h, _ := engineOf(t, `
access:
  deny_clients: [{api_key: revoked}]
  deny_status: 401
rules:
  - name: api
    key: api_key
    policies: [{rate: 100/min}]
overrides:
  - client: {api_key: revoked}
    unlimited: true
`)
	if _, st := admitted(t, h, "/x", "revoked", "192.0.2.1:1", 2); st[http.StatusUnauthorized] != 2 {
		t.Errorf("a denied client: %v; want 401 twice", st)
	}
	if ok, _ := admitted(t, h, "/x", "fine", "192.0.2.1:1", 2); ok != 2 {
		t.Errorf("another client: %d of 2 admitted", ok)
	}
}

var _ = time.Second

// An override applied while the rules run keeps the counts made: its policy has the rule's
// name, algorithm and window, so it reads the state the rule's wrote (as a limit change does).
func TestOverrideKeepsTheCount(t *testing.T) {
	const before = `version: "1"
rules:
  - name: api
    key: api_key
    policies: [{name: per-minute, algorithm: fixed_window, rate: 10/min}]
`
	const after = before + `overrides:
  - client: {api_key: acme}
    policies: [{name: per-minute, algorithm: fixed_window, rate: 15/min}]
`
	set, err := Parse("limits.yaml", []byte(before))
	if err != nil {
		t.Fatal(err)
	}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0)))
	e, err := NewEngine(store, set)
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.FromGuard(e.Guard())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	if ok, _ := admitted(t, h, "/x", "acme", "192.0.2.1:1", 8); ok != 8 {
		t.Fatalf("before the override: %d of 8 admitted", ok)
	}
	next, err := Parse("limits.yaml", []byte(strings.Replace(after, `"1"`, `"2"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(next); err != nil {
		t.Fatal(err)
	}
	if ok, _ := admitted(t, h, "/x", "acme", "192.0.2.1:1", 10); ok != 7 {
		t.Errorf("after raising acme's limit from 10 to 15 with 8 used: %d of 10 admitted; want 7", ok)
	}
}

// Diff (push -dry-run) says what changes in the lists and the overrides.
func TestDiffOfAccessAndOverrides(t *testing.T) {
	from, err := Parse("a.yaml", []byte(overridesDoc))
	if err != nil {
		t.Fatal(err)
	}
	to, err := Parse("b.yaml", []byte(strings.NewReplacer(
		"allow: [10.0.0.0/8]", "allow: [10.0.0.0/8, 192.168.0.0/16]",
		"rate: 600/min", "rate: 900/min",
		"  - client: {api_key: monitor}\n    unlimited: true\n", "").Replace(overridesDoc)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range Diff(from, to) {
		got = append(got, c.String())
	}
	want := []string{
		"~ (access): allow: + 192.168.0.0/16",
		"~ (overrides): ~ api_key=acme on every rule keyed by api_key: per-minute 600/1m0s gcra → per-minute 900/1m0s gcra; - api_key=monitor on every rule keyed by api_key: unlimited",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Diff =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := Diff(from, mustParseText(t, overridesReordered)); len(d) != 0 {
		t.Errorf("the reordered document differs: %v", d)
	}
}

func mustParseText(t *testing.T, doc string) *Set {
	t.Helper()
	s, err := Parse("limits.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ClientLimits explains what the engine does: the same choice, with the line that decided.
func TestClientLimitsExplains(t *testing.T) {
	set := mustParseText(t, overridesDoc)
	rules := set.Rules()
	export, api := &rules[0], &rules[1]
	for _, c := range []struct {
		rule      *Rule
		key, want string
		limit     int64
	}{
		{export, "hdr:x-api-key:acme", "overrides: api_key=acme on rule export: export-per-minute 10/1m0s gcra (line 14)", 10},
		{api, "hdr:x-api-key:acme", "overrides: api_key=acme on every rule keyed by api_key: per-minute 600/1m0s gcra (line 17)", 600},
		{api, "hdr:x-api-key:other", "", 60},
		{api, "hdr:x-api-key:monitor", "overrides: api_key=monitor on every rule keyed by api_key: unlimited (line 19)", 0},
	} {
		got := set.ClientLimits(c.rule, c.key)
		var limit int64
		if len(got.Policies) > 0 {
			limit = got.Policies[0].Limit
		}
		if got.Why != c.want || limit != c.limit || got.Unlimited != (c.limit == 0) {
			t.Errorf("ClientLimits(%s, %s) = %+v; want %q, limit %d", c.rule.Name, c.key, got, c.want, c.limit)
		}
	}
	ipSet := mustParseText(t, "access:\n  deny: [203.0.113.0/24]\n  allow: [10.0.0.0/8]\nrules:\n  - name: api\n    key: ip\n    policies: [{rate: 1/s}]\n")
	r := ipSet.Rules()[0]
	if got := ipSet.ClientLimits(&r, "ip:203.0.113.9"); !got.Denied || got.Why != "access.deny: 203.0.113.0/24 (line 2)" {
		t.Errorf("a denied address: %+v", got)
	}
	if got := ipSet.ClientLimits(&r, "ip:10.1.2.3"); !got.Unlimited || got.Why != "access.allow: 10.0.0.0/8 (line 3)" {
		t.Errorf("an allowed address: %+v", got)
	}
}

// The lists reload with the file like any rule: a document whose network is not one, or
// lists one twice, is refused at its line, and the last good lists stay in force.
func TestAccessHotReload(t *testing.T) {
	doc := func(version, deny string) []byte {
		return []byte("version: \"" + version + "\"\naccess:\n  deny: [" + deny + "]\nrules:\n  - {name: api, key: ip, policies: [{rate: 100/min}]}\n")
	}
	e, rep, path := watched(t, doc("v1", "203.0.113.0/24"), WithPollInterval(time.Hour))
	h := ratelimit.FromGuard(e.Guard())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	if _, st := admitted(t, h, "/", "", "203.0.113.9:1", 1); st[http.StatusForbidden] != 1 {
		t.Fatalf("v1 denies 203.0.113.0/24: %v", st)
	}
	replaceFile(t, path, doc("v2", "198.51.100.0/24"))
	if ev := rep.next(t); ev != "applied v2" {
		t.Fatalf("after the change: %q", ev)
	}
	if ok, _ := admitted(t, h, "/", "", "203.0.113.9:1", 1); ok != 1 {
		t.Errorf("v2 no longer denies 203.0.113.0/24")
	}
	for _, bad := range []string{"198.51.100.0/33", "198.51.100.0/24, 198.51.100.9/24"} {
		replaceFile(t, path, doc("v3", bad))
		if ev := rep.next(t); !strings.HasPrefix(ev, "rejected "+path+":3: access.deny[") {
			t.Errorf("deny [%s]: %q; want it rejected at line 3", bad, ev)
		}
		if e.Version() != "v2" {
			t.Errorf("after a bad document, version %q is in use; want v2", e.Version())
		}
		if _, st := admitted(t, h, "/", "", "198.51.100.9:1", 1); st[http.StatusForbidden] != 1 {
			t.Errorf("the last good list stopped denying: %v", st)
		}
	}
}

// An engine given WithAccess in WithGuardOptions refuses a document with access lists, naming
// the option: the document's lists would otherwise replace the engine's, unseen.
func TestAccessInGuardOptionsAndDocument(t *testing.T) {
	set := mustParseText(t, "access:\n  deny: [203.0.113.0/24]\nrules:\n  - {name: api, key: ip, policies: [{rate: 1/s}]}\n")
	_, err := NewEngine(ratelimit.NewMemoryStore(), set,
		WithGuardOptions(ratelimit.WithAccess(ratelimit.Access{Allow: []string{"10.0.0.0/8"}})))
	if err == nil || !strings.Contains(err.Error(), "WithAccess") {
		t.Fatalf("NewEngine = %v; want an error naming WithAccess given twice", err)
	}
}

// A Skip of your own in WithGuardOptions sits beside a document's access lists: the document's
// lists and your health checks make one guard (Skips add up beside the lists), and the
// lists are read first.
func TestAccessSkipInGuardOptionsBesideDocument(t *testing.T) {
	set := mustParseText(t, "access:\n  deny: [203.0.113.0/24]\nrules:\n  - {name: api, key: ip, policies: [{rate: 1/h}]}\n")
	health := func(r ratelimit.Request) bool { return r.Path() == "/healthz" }
	e, err := NewEngine(ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0))), set,
		WithGuardOptions(ratelimit.WithAccess(ratelimit.Access{Skip: health})))
	if err != nil {
		t.Fatalf("NewEngine with a Skip in its guard options and access lists in its document: %v", err)
	}
	h := ratelimit.FromGuard(e.Guard())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	if ok, st := admitted(t, h, "/healthz", "", "192.0.2.1:1", 5); ok != 5 {
		t.Errorf("health checks, 1 an hour: %d of 5 admitted (%v); want all, skipped", ok, st)
	}
	if ok, _ := admitted(t, h, "/items", "", "192.0.2.1:1", 3); ok != 1 {
		t.Errorf("other paths, 1 an hour: %d of 3 admitted; want 1", ok)
	}
	if _, st := admitted(t, h, "/healthz", "", "203.0.113.5:1", 1); st[http.StatusForbidden] != 1 {
		t.Errorf("a denied network's health check: %v; want 403, the lists read first", st)
	}
}
