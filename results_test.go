package ratelimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// answers counts the results an Observer is told, by result.
type answers struct {
	mu sync.Mutex
	n  map[observe.Result]int
}

func (a *answers) Decided(ratelimit.DecisionEvent)          {}
func (a *answers) StoreFailed(error)                        {}
func (a *answers) BreakerChanged(_, _ observe.BreakerState) {}
func (a *answers) MemoryStoreFull(bool)                     {}
func (a *answers) KeyFellBack(string)                       {}
func (a *answers) RedisEvictionPolicy(string, bool)         {}
func (a *answers) Leased(bool, time.Duration)               {}
func (a *answers) Queued(bool)                              {}
func (a *answers) DenialCacheDeaf(bool)                     {}
func (a *answers) StoreDegraded(string, bool)               {}
func (a *answers) Answered(e observe.RequestEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[observe.Result]int{}
	}
	a.n[e.Result]++
}

func (a *answers) take() map[observe.Result]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.n
	a.n = nil
	return n
}

// Every request a guard answers is reported once, with the result its client saw, and the
// Outcome carries the same result: one table of requests, each with its status and result.
func TestResults(t *testing.T) {
	type req struct {
		path   string
		status int
		result observe.Result
	}
	obs := &answers{}
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	byPath := func(mws map[string]func(http.Handler) http.Handler) http.Handler {
		mux := http.NewServeMux()
		for path, mw := range mws {
			mux.Handle(path, mw(ok))
		}
		return mux
	}
	run := func(t *testing.T, h http.Handler, reqs []req) {
		t.Helper()
		want := map[observe.Result]int{}
		for i, rq := range reqs {
			r := httptest.NewRequest("GET", rq.path, nil)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != rq.status {
				t.Errorf("request %d (%s): status %d, want %d", i+1, rq.path, w.Code, rq.status)
			}
			want[rq.result]++
		}
		got := obs.take()
		for _, res := range observe.Results() {
			if got[res] != want[res] {
				t.Errorf("%s: counted %d, want %d", res, got[res], want[res])
			}
		}
	}

	t.Run("memory", func(t *testing.T) {
		store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()), ratelimit.WithObserver(obs))
		l := mustNew(t, store, ratelimit.Policy{Limit: 1, Window: time.Hour})
		h := byPath(map[string]func(http.Handler) http.Handler{
			"/limited": ratelimit.Middleware(l),
			"/skipped": ratelimit.Middleware(l, ratelimit.WithSkip(func(ratelimit.Request) bool { return true })),
			"/keyless": ratelimit.Middleware(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.RejectMissingKey(401)),
			"/badcost": ratelimit.Middleware(l, ratelimit.WithCost(func(ratelimit.Request) int64 { return -1 })),
		})
		run(t, h, []req{
			{"/limited", 200, observe.ResultAllowed},
			{"/limited", 429, observe.ResultDenied},
			{"/skipped", 200, observe.ResultSkipped},
			{"/keyless", 401, observe.ResultRejected},
			{"/badcost", 400, observe.ResultRejected},
		})
	})

	t.Run("outage", func(t *testing.T) {
		f := newFaultyRedis(t, ratelimit.WithBreaker(0, 0), ratelimit.WithObserver(obs))
		fb := newFaultyRedis(t, ratelimit.WithBreaker(0, 0), ratelimit.WithFallback(1), ratelimit.WithObserver(obs))
		policy := ratelimit.Policy{Limit: 1, Window: time.Hour}
		l, lf := mustNew(t, f.store, policy), mustNew(t, fb.store, policy)
		quiet := ratelimit.WithErrorHandler(func(ratelimit.Request, error) {})
		h := byPath(map[string]func(http.Handler) http.Handler{
			"/open":           ratelimit.Middleware(l, quiet),
			"/closed":         ratelimit.Middleware(l, quiet, ratelimit.FailClosed(503)),
			"/fallback":       ratelimit.Middleware(lf, quiet),
			"/fallbackclosed": ratelimit.Middleware(lf, quiet, ratelimit.FailClosed(503)),
		})
		f.proxy.Refuse()
		fb.proxy.Refuse()
		run(t, h, []req{
			{"/open", 200, observe.ResultUnlimited},
			{"/open", 200, observe.ResultUnlimited},
			{"/closed", 503, observe.ResultErrorDenied},
			{"/fallback", 200, observe.ResultFallbackAllowed},
			{"/fallback", 429, observe.ResultFallbackDenied},
			{"/fallbackclosed", 503, observe.ResultErrorDenied},
		})
	})

	t.Run("canceled", func(t *testing.T) {
		f := newFaultyRedis(t, ratelimit.WithObserver(obs))
		h := ratelimit.Middleware(mustNew(t, f.store, ratelimit.Policy{Limit: 1, Window: time.Hour}))(ok)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil).WithContext(ctx))
		if got := obs.take(); w.Code != 499 || got[observe.ResultCanceled] != 1 || len(got) != 1 {
			t.Errorf("a request whose client went away: status %d, counted %v; want 499, one canceled", w.Code, got)
		}
	})
}

// A request that passes through two guards, as README's login route does (the middleware
// around the mux, then the route's own), is counted by each: allowed by the outer one, then
// what the inner one decided. So requests_total equals the responses clients saw only on
// routes behind one guard (README said it equals them, with this very setup in Use it): a
// login the route's limit refused is counted allowed and denied, one admitted twice allowed.
func TestResultsOfTwoGuardsOnOneRequest(t *testing.T) {
	obs := &answers{}
	clock := newFakeClock()
	limiter := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(obs), ratelimit.WithClock(clock)),
		ratelimit.Policy{Limit: 10, Window: time.Second})
	mux := http.NewServeMux()
	mux.Handle("POST /login", ratelimit.Middleware(limiter,
		ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 1, Window: time.Minute}),
	)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	h := ratelimit.Middleware(limiter)(mux)
	for _, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", "/login", nil))
		if w.Code != want {
			t.Fatalf("login: %d; want %d", w.Code, want)
		}
	}
	got := obs.take()
	if got[observe.ResultAllowed] != 3 || got[observe.ResultDenied] != 1 || len(got) != 2 {
		t.Errorf("two logins, the first admitted, the second refused by the route's limit: results %v; want 3 allowed (2 by the outer guard, 1 by the route's) and 1 denied", got)
	}
}
