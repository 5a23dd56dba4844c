package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// The outer middleware skips the login route (it has its own limit), or allows a network:
// the outcome is not put in the request's context (middleware.go:77), so the inner guard
// reads the load balancer's address for every client.
// A route's own guard reads the client IP through the outer guard's trusted proxies also when
// the outer one skips the request or lets it through on its Allow list with no observer: the
// net/http middleware handed nothing over then, and the route's limit was one for every client.
func TestInnerGuardReadsTheClientIPWhenTheOuterDecidesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  ratelimit.Option
	}{
		{"skip", ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool { return r.Path() == "/login" }})},
		{"allowlisted", ratelimit.WithAccess(ratelimit.Access{Allow: []string{"198.51.100.0/24", "203.0.113.0/24"}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))
			perClient := mustNew(t, store, ratelimit.Policy{Name: "api", Limit: 100, Window: time.Minute})
			login := mustNew(t, store, ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})
			mux := http.NewServeMux()
			mux.Handle("POST /login", ratelimit.Middleware(login, ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute())))(
				http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
			h := ratelimit.Middleware(perClient, ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8"), tc.opt)(mux)
			send := func(client string) int {
				r := httptest.NewRequest(http.MethodPost, "/login", nil)
				r.RemoteAddr = "10.0.0.1:4000"
				r.Header.Set("X-Forwarded-For", client)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w.Code
			}
			for range 6 {
				send("203.0.113.1")
			}
			if got := send("198.51.100.7"); got != http.StatusOK {
				t.Errorf("first login of another client: %d, want 200", got)
			}
		})
	}
}
