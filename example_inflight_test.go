package ratelimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// Protect a slow endpoint with an in-flight limit beside a rate limit: at most 2 exports run at
// once per client, and 100 per hour. A slot comes back when its handler returns (also when it
// panics); one held by an instance that died comes back when its lifetime, the Window, ends.
// The third concurrent export is refused with 503 and Retry-After: 1.
func ExampleResponse_inFlight() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(),
		ratelimit.Policy{Name: "exports", Limit: 100, Window: time.Hour},
		ratelimit.Policy{Name: "exports-running", Limit: 2, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	if err != nil {
		panic(err)
	}
	running, release := make(chan struct{}), make(chan struct{})
	export := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running <- struct{}{}
		<-release // a long export
	})
	h := ratelimit.Middleware(limiter, ratelimit.WithResponse(ratelimit.Response{
		InFlightStatus: http.StatusServiceUnavailable, IETFDraft: 11}))(export)

	for range 2 {
		go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/export", nil))
		<-running
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/export", nil))
	fmt.Println(w.Code, w.Header().Get("Retry-After"), w.Header().Get("RateLimit-Policy"))
	close(release)
	// Output:
	// 503 1 "exports";q=100;w=3600, "exports-running";q=2;qu="concurrent-requests"
}
