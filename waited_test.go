package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// observe.RequestEvent.Waited: "0 for a request that did not wait"; the metrics' time in
// queue: "only requests that waited". Under a guard with WaitForSlot (or a shaping policy),
// a request admitted at once, or denied at once by a rate policy, is reported as having waited
// for as long as its check took.
// A request that did not wait reports Waited 0, under a guard that may hold requests too: the
// whole check was timed, store call included, so every request of such a guard landed in the
// time-in-queue histograms ("only requests that waited"), allowed and denied alike.
func TestWaitedOnlyForRequestsThatWaited(t *testing.T) {
	var mu sync.Mutex
	var events []observe.RequestEvent
	obs := &ratelimit.Observer{Answered: func(e observe.RequestEvent) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}}
	clock := &sleepingClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), tick: time.Millisecond} // a store call takes time
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithObserver(obs)),
		ratelimit.Policy{Name: "slots", Limit: 10, Window: time.Minute, Algorithm: algorithms.InFlight{}},
		ratelimit.Policy{Name: "rate", Limit: 1, Window: time.Hour, Algorithm: algorithms.FixedWindow{}})
	h := ratelimit.Middleware(l, ratelimit.WaitForSlot(time.Second),
		ratelimit.WithKey(func(ratelimit.Request) (string, error) { return "k", nil }))(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != want {
			t.Fatalf("status %d; want %d", w.Code, want)
		}
	}
	if len(events) != 2 {
		t.Fatalf("%d requests reported, want 2", len(events))
	}
	for _, e := range events {
		if e.Waited != 0 {
			t.Errorf("%v: Waited %v for a request that did not wait", e.Result, e.Waited)
		}
	}
}
