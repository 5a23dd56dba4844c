package rules

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
)

// keyRequest is a request with every kind of identity: a client address, a method, a route,
// headers and a user.
func keyRequest() *http.Request {
	r := httptest.NewRequest("PATCH", "/items/42", nil)
	r.RemoteAddr = "192.0.2.7:4242"
	r.Pattern = "PATCH /items/{id}"
	r.Header.Set("X-API-Key", "k-123")
	r.Header.Set("X-Tenant", "acme")
	return r.WithContext(context.WithValue(r.Context(), userKey{}, "u-9"))
}

// Each key part gives the key of the core function it names, and several are joined as
// KeyJoin joins them. "route" is the pattern the rule matched, which here is the route the
// request's router matched too.
func TestKeyFuncIsTheCoreKeyFunc(t *testing.T) {
	for _, tc := range []struct {
		key  string // the key field, as YAML
		core ratelimit.KeyFunc
	}{
		{"ip", ratelimit.KeyByIP()},
		{"[ip]", ratelimit.KeyByIP()},
		{"route", ratelimit.KeyByRoute()},
		{"method", ratelimit.KeyByMethod()},
		{"api_key", ratelimit.KeyByHeader("X-API-Key")},
		{"user", ratelimit.KeyByUser(userKey{})},
		{`"header:X-Tenant"`, ratelimit.KeyByHeader("X-Tenant")},
		{`"header:x-tenant"`, ratelimit.KeyByHeader("X-Tenant")},
		{"[api_key, ip]", ratelimit.KeyJoin(ratelimit.KeyByHeader("X-API-Key"), ratelimit.KeyByIP())},
		{`[ip, route, method, user, "header:X-Tenant"]`, ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute(),
			ratelimit.KeyByMethod(), ratelimit.KeyByUser(userKey{}), ratelimit.KeyByHeader("X-Tenant"))},
	} {
		doc := fmt.Sprintf("rules: [{name: a, match: {pattern: 'PATCH /items/{id}'}, key: %s, policies: [{limit: 1, window: 1s}]}]", tc.key)
		s, err := Parse("limits.yaml", []byte(doc), WithUserKey(userKey{}))
		if err != nil {
			t.Fatalf("key %s: %v", tc.key, err)
		}
		r := request{keyRequest()}
		got, gotErr := s.rules[0].KeyFunc()(r)
		want, wantErr := tc.core(r)
		if got != want || gotErr != wantErr || got == "" {
			t.Errorf("key %s: got %q (%v), the core's %q (%v)", tc.key, got, gotErr, want, wantErr)
		}
	}
}

// "route" is the pattern the rule matched even when no router has routed the request yet (a
// middleware around a ServeMux): the key does not depend on where the middleware sits.
func TestRouteKeyIsTheRulesPattern(t *testing.T) {
	s := mustParseString(t, "rules: [{name: a, match: {pattern: 'PATCH /items/{id}'}, key: [api_key, route], policies: [{limit: 1, window: 1s}]}]")
	routed, unrouted := keyRequest(), keyRequest()
	unrouted.Pattern = ""
	a, errA := s.rules[0].KeyFunc()(request{routed})
	b, errB := s.rules[0].KeyFunc()(request{unrouted})
	if a != b || errA != nil || errB != nil || !strings.Contains(a, "route:/items/{id}") {
		t.Errorf("routed %q (%v), not yet routed %q (%v); want one key with route:/items/{id}", a, errA, b, errB)
	}
}

// A rule's key function limits requests in the core's middleware: two clients with one API
// key share its quota, and another key has its own.
func TestKeyFuncInMiddleware(t *testing.T) {
	s := mustParseString(t, "rules: [{name: a, key: api_key, policies: [{limit: 1, window: 1h}]}]")
	rule, _ := s.Match(httptest.NewRequest("GET", "/", nil), "")
	l, err := ratelimit.New(ratelimit.NewMemoryStore(), rule.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.Middleware(l, ratelimit.WithKey(rule.KeyFunc()))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for i, tc := range []struct {
		apiKey, addr string
		status       int
	}{
		{"k1", "192.0.2.1:1", 200},
		{"k1", "192.0.2.2:1", 429}, // same key, another client
		{"k2", "192.0.2.1:1", 200},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.addr
		r.Header.Set("X-API-Key", tc.apiKey)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status {
			t.Errorf("request %d (key %s from %s): status %d, want %d", i, tc.apiKey, tc.addr, w.Code, tc.status)
		}
	}
}
