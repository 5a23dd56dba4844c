package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// exemptionsGuide is the Go code of docs/exemptions.md, as written.
func exemptionsGuide(limiter *ratelimit.Limiter, mux http.Handler) http.Handler {
	handler := ratelimit.Middleware(limiter,
		ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.1"), // the load balancer
		ratelimit.WithAccess(ratelimit.Access{
			Allow:    []string{"10.0.0.0/8", "2001:db8:aa::/48"}, // our offices and health checks
			Deny:     []string{"203.0.113.0/24"},                 // an abusive range
			DenyKeys: []string{"hdr:x-api-key:revoked-key"},      // a revoked API key
		}),
		ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
	)(mux)
	return handler // README: (the test returns what the guide builds)
}

// The guide's Go code runs as the guide says: the office through the load balancer unlimited,
// the abusive range and the revoked key refused, an untrusted peer claiming an office address
// limited, everyone else limited.
func TestExemptionsGuideGo(t *testing.T) {
	block := readmetest.Code(readmetest.Block(t, "docs/exemptions.md", "## Allow and deny lists in Go", "go"))
	readmetest.Same(t, "docs/exemptions.md's Go code", readmetest.FuncBody(t, "exemptions_guide_test.go", "exemptionsGuide"), block)

	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 2, Window: time.Hour})
	h := exemptionsGuide(l, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func(peer, xff, key string) int {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = peer
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		if key != "" {
			r.Header.Set("X-API-Key", key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i, c := range []struct {
		peer, xff, key string
		want           int
	}{
		{"10.0.0.1:1", "10.20.30.40", "", 200}, // the office, through the load balancer
		{"10.0.0.1:1", "10.20.30.40", "", 200},
		{"10.0.0.1:1", "10.20.30.40", "", 200}, // over the limit of 2: unlimited
		{"[2001:db8:aa:1::5]:1", "", "", 200},
		{"10.0.0.1:1", "203.0.113.50", "", 403}, // the abusive range, through the load balancer
		{"192.0.2.7:1", "", "revoked-key", 403}, // the revoked key
		{"192.0.2.8:1", "10.20.30.40", "", 200}, // an untrusted peer claiming the office: limited by its address
		{"192.0.2.8:1", "10.20.30.40", "", 200},
		{"192.0.2.8:1", "10.20.30.40", "", 429},
	} {
		if got := send(c.peer, c.xff, c.key); got != c.want {
			t.Errorf("request %d (peer %s, X-Forwarded-For %q, key %q): %d, want %d", i, c.peer, c.xff, c.key, got, c.want)
		}
	}
}
