package ratelimitprom_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	ratelimitprom "github.com/a7d3e0dd/ratelimit/prometheus"
)

// README's Use it puts the login route behind two guards: the middleware around the mux, and
// the route's own. ratelimit_requests_total counts each request once, by what its client
// got, so its counts equal the responses by status: 8 logins (5 admitted by the route's 5 a
// minute, 3 refused) and 2 other requests are 7 allowed and 3 denied. (Each guard counted
// them before: 15 allowed.)
func TestRequestsThroughTwoGuardsEqualResponses(t *testing.T) {
	obs := ratelimitprom.New()
	limiter := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(obs.Hooks())),
		ratelimit.Policy{Limit: 10, Window: time.Second},
		ratelimit.Policy{Limit: 1000, Window: time.Hour})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(http.ResponseWriter, *http.Request) {})
	mux.Handle("POST /login", ratelimit.Middleware(limiter,
		ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute, Algorithm: algorithms.SlidingLog{}}),
		ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute())),
	)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	h := ratelimit.Middleware(limiter)(mux)
	statuses := map[int]float64{}
	send := func(method, path string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		statuses[w.Code]++
	}
	for range 8 {
		send("POST", "/login")
	}
	send("GET", "/items/1")
	send("GET", "/items/2")
	if statuses[http.StatusOK] != 7 || statuses[http.StatusTooManyRequests] != 3 {
		t.Fatalf("responses by status %v; want 7 × 200 and 3 × 429", statuses)
	}
	for result, want := range map[string]float64{"allowed": statuses[http.StatusOK], "denied": statuses[http.StatusTooManyRequests]} {
		if got := value(t, obs, "ratelimit_requests_total", "result="+result); got != want {
			t.Errorf("ratelimit_requests_total{result=%q} = %v; want %v, the responses", result, got, want)
		}
	}
}
