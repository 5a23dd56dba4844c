package ratelimit_test

import (
	"context"
	"errors"
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

// observer returns the hooks that count into a: Answered alone.
func (a *answers) observer() *ratelimit.Observer {
	return &ratelimit.Observer{Answered: a.Answered}
}

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
		store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()), ratelimit.WithObserver(obs.observer()))
		l := mustNew(t, store, ratelimit.Policy{Limit: 1, Window: time.Hour})
		h := byPath(map[string]func(http.Handler) http.Handler{
			"/limited": ratelimit.Middleware(l),
			"/skipped": ratelimit.Middleware(l, ratelimit.WithAccess(ratelimit.Access{Skip: func(ratelimit.Request) bool { return true }})),
			"/keyless": ratelimit.Middleware(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.WithAccess(ratelimit.Access{MissingKey: 401})),
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
		f := newFaultyRedisTo(t, obs.observer(), ratelimit.WithBreaker(0, 0))
		fb := newFaultyRedisTo(t, obs.observer(), ratelimit.WithBreaker(0, 0), ratelimit.WithFallback(1))
		policy := ratelimit.Policy{Limit: 1, Window: time.Hour}
		l, lf := mustNew(t, f.store, policy), mustNew(t, fb.store, policy)
		quiet := ratelimit.WithErrorHandler(func(ratelimit.Request, error) {})
		h := byPath(map[string]func(http.Handler) http.Handler{
			"/open":           ratelimit.Middleware(l, quiet),
			"/closed":         ratelimit.Middleware(l, quiet, ratelimit.WithResponse(ratelimit.Response{FailClosed: 503})),
			"/fallback":       ratelimit.Middleware(lf, quiet),
			"/fallbackclosed": ratelimit.Middleware(lf, quiet, ratelimit.WithResponse(ratelimit.Response{FailClosed: 503})),
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
		f := newFaultyRedisTo(t, obs.observer())
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

// A request that passes through two guards, as the login route of README's Use it does (the
// middleware around the mux, then the route's own), is one response: the observer is told of it once,
// with that response's result (it was told by each guard: allowed by the outer one, then what
// the inner one decided, so a login the route's limit refused counted allowed and denied).
func TestResultsOfTwoGuardsOnOneRequest(t *testing.T) {
	skip := ratelimit.WithAccess(ratelimit.Access{Skip: func(ratelimit.Request) bool { return true }})
	quiet := ratelimit.WithErrorHandler(func(ratelimit.Request, error) {})
	type guard struct {
		broken bool // over a store that fails (the guard fails open: unlimited)
		opts   []ratelimit.Option
	}
	for _, tc := range []struct {
		name   string
		guards []guard // outermost first
		panics bool    // the handler panics
		status []int   // of each request
		want   map[observe.Result]int
	}{
		{"allowed, then denied by the route's limit", []guard{{}, {opts: []ratelimit.Option{ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 1, Window: time.Minute})}}},
			false, []int{200, 429}, map[observe.Result]int{observe.ResultAllowed: 1, observe.ResultDenied: 1}},
		{"skipped outside, allowed inside", []guard{{opts: []ratelimit.Option{skip}}, {}},
			false, []int{200}, map[observe.Result]int{observe.ResultAllowed: 1}},
		{"allowed outside, skipped inside", []guard{{}, {opts: []ratelimit.Option{skip}}},
			false, []int{200}, map[observe.Result]int{observe.ResultAllowed: 1}},
		{"unlimited outside (its store down), allowed inside", []guard{{broken: true, opts: []ratelimit.Option{quiet}}, {}},
			false, []int{200}, map[observe.Result]int{observe.ResultUnlimited: 1}},
		{"allowed outside, unlimited inside", []guard{{}, {broken: true, opts: []ratelimit.Option{quiet}}},
			false, []int{200}, map[observe.Result]int{observe.ResultUnlimited: 1}},
		{"allowed outside, rejected inside", []guard{{}, {opts: []ratelimit.Option{ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.WithAccess(ratelimit.Access{MissingKey: 401})}}},
			false, []int{401}, map[observe.Result]int{observe.ResultRejected: 1}},
		{"three guards", []guard{{}, {opts: []ratelimit.Option{skip}}, {}},
			false, []int{200, 200}, map[observe.Result]int{observe.ResultAllowed: 2}},
		{"three guards, the innermost refuses", []guard{{}, {}, {opts: []ratelimit.Option{ratelimit.WithPolicies(ratelimit.Policy{Name: "inner", Limit: 1, Window: time.Minute})}}},
			false, []int{200, 429}, map[observe.Result]int{observe.ResultAllowed: 1, observe.ResultDenied: 1}},
		{"the handler panics", []guard{{}, {}},
			true, []int{0}, map[observe.Result]int{observe.ResultAllowed: 1}},
		{"the handler panics, the inner guard waits for the status", []guard{{}, {opts: []ratelimit.Option{ratelimit.CountIf(func(int) bool { return true })}}},
			true, []int{0}, map[observe.Result]int{observe.ResultAllowed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &answers{}
			hooks := obs.observer() // one observer, of both stores
			clock := newFakeClock()
			store := ratelimit.NewMemoryStore(ratelimit.WithObserver(hooks), ratelimit.WithClock(clock))
			var h http.Handler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				if tc.panics {
					panic(http.ErrAbortHandler)
				}
			})
			for i := len(tc.guards) - 1; i >= 0; i-- {
				g := tc.guards[i]
				s := store
				if g.broken {
					s = observedDownStore{hooks}
				}
				h = ratelimit.Middleware(mustNew(t, s, ratelimit.Policy{Limit: 10, Window: time.Second}), g.opts...)(h)
			}
			for i, want := range tc.status {
				w := httptest.NewRecorder()
				func() {
					defer func() {
						if p := recover(); p != nil && !tc.panics {
							panic(p)
						}
					}()
					h.ServeHTTP(w, httptest.NewRequest("POST", "/login", nil))
				}()
				if !tc.panics && w.Code != want {
					t.Fatalf("request %d: %d; want %d", i+1, w.Code, want)
				}
			}
			if got := obs.take(); !sameCounts(got, tc.want) {
				t.Errorf("results %v; want %v, once per request", got, tc.want)
			}
		})
	}
}

// The results table of docs/guard.md gives the headers of a request one guard answered. Through two guards
// the response carries the inner guard's fields, or the outer's when the inner counted no quota:
// a request unlimited by one guard has the other's fields, if it counted one.
func TestHeadersOfTwoGuards(t *testing.T) {
	quiet := ratelimit.WithErrorHandler(func(ratelimit.Request, error) {})
	for _, tc := range []struct {
		name                 string
		outerDown, innerDown bool // over a store that fails (the guard fails open)
		inner                []ratelimit.Option
		code                 int
		limit                string
		want                 observe.Result
	}{
		{"both count: the inner's", false, false, nil, 200, "7", observe.ResultAllowed},
		{"unlimited outside: the inner's", true, false, nil, 200, "7", observe.ResultUnlimited},
		{"unlimited inside: the outer's", false, true, nil, 200, "10", observe.ResultUnlimited},
		{"unlimited in both: none", true, true, nil, 200, "", observe.ResultUnlimited},
		{"rejected inside: the outer's", false, false, []ratelimit.Option{ratelimit.WithAccess(ratelimit.Access{MissingKey: http.StatusUnauthorized}),
			ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key"))}, http.StatusUnauthorized, "10", observe.ResultRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &answers{}
			hooks := obs.observer() // one observer, of both stores
			store := ratelimit.NewMemoryStore(ratelimit.WithObserver(hooks), ratelimit.WithClock(newFakeClock()))
			guard := func(down bool, limit int64, next http.Handler, opts ...ratelimit.Option) http.Handler {
				s := ratelimit.Store(store)
				if down {
					s = observedDownStore{hooks}
				}
				return ratelimit.Middleware(mustNew(t, s, ratelimit.Policy{Limit: limit, Window: time.Second}), append(opts, quiet)...)(next)
			}
			h := guard(tc.outerDown, 10, guard(tc.innerDown, 7, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), tc.inner...))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
			if got := w.Header().Get("X-RateLimit-Limit"); w.Code != tc.code || got != tc.limit {
				t.Errorf("%d, X-RateLimit-Limit %q; want %d, %q", w.Code, got, tc.code, tc.limit)
			}
			if got, want := obs.take(), map[observe.Result]int{tc.want: 1}; !sameCounts(got, want) {
				t.Errorf("results %v; want %v", got, want)
			}
		})
	}
}

// A handler may serve requests of its own with its request's context, on goroutines of their
// own: a fan-out to parts behind a guarded handler, or http.TimeoutHandler, which runs the
// handler on a goroutine and returns without it when the time is up. The guards of those
// requests find the outer guard's report, and at most one takes it over, without a data race
// (this test is for the race detector: the count is n also when two of them take it).
func TestResultsOfRequestsServedOnOtherGoroutines(t *testing.T) {
	const n = 4
	obs := &answers{}
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(obs.observer()), ratelimit.WithClock(newFakeClock())),
		ratelimit.Policy{Limit: 100, Window: time.Minute})
	part := ratelimit.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	var wg sync.WaitGroup
	h := ratelimit.Middleware(l)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				part.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/part", nil).WithContext(r.Context()))
			}()
		}
		// Returns before its parts are served, as http.TimeoutHandler does when the time is up.
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/batch", nil))
	wg.Wait()
	if got := obs.take(); got[observe.ResultAllowed] < n || got[observe.ResultAllowed] > n+1 || len(got) != 1 {
		t.Errorf("results %v; want %d or %d allowed", got, n, n+1)
	}
}

// Guards over stores with observers of their own each tell their own: one request through
// two such guards is counted once by each observer.
func TestResultsOfTwoGuardsWithTwoObservers(t *testing.T) {
	outer, inner := &answers{}, &answers{}
	clock := newFakeClock()
	lo := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(outer.observer()), ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 10, Window: time.Second})
	li := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(inner.observer()), ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 1, Window: time.Minute})
	h := ratelimit.Middleware(lo)(ratelimit.Middleware(li)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	for range 2 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}
	if got, want := outer.take(), map[observe.Result]int{observe.ResultAllowed: 2}; !sameCounts(got, want) {
		t.Errorf("the outer observer: %v; want %v", got, want)
	}
	if got, want := inner.take(), map[observe.Result]int{observe.ResultAllowed: 1, observe.ResultDenied: 1}; !sameCounts(got, want) {
		t.Errorf("the inner observer: %v; want %v", got, want)
	}
}

// A guard over a store without an observer tells nothing of its own, and the outer guard's
// observer counts the request by what its client got: a 429 of the inner guard is denied, not
// the outer's allowed (found by a review: it counted a refused request as allowed).
func TestResultsOfAnInnerGuardWithoutAnObserver(t *testing.T) {
	outer := &answers{}
	clock := newFakeClock()
	lo := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(outer.observer()), ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 10, Window: time.Second})
	li := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 1, Window: time.Minute})
	h := ratelimit.Middleware(lo)(ratelimit.Middleware(li)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	codes := []int{}
	for range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		codes = append(codes, w.Code)
	}
	if codes[0] != http.StatusOK || codes[1] != http.StatusTooManyRequests {
		t.Fatalf("statuses %v; want 200 then 429", codes)
	}
	if got, want := outer.take(), map[observe.Result]int{observe.ResultAllowed: 1, observe.ResultDenied: 1}; !sameCounts(got, want) {
		t.Errorf("the outer observer: %v; want %v (what the clients got)", got, want)
	}
}

// sameCounts reports whether two counts by result agree.
func sameCounts(a, b map[observe.Result]int) bool {
	for _, r := range observe.Results() {
		if a[r] != b[r] {
			return false
		}
	}
	return true
}

// observedDownStore fails every call, and has an observer.
type observedDownStore struct{ obs *ratelimit.Observer }

func (observedDownStore) Check(context.Context, string, []ratelimit.Policy, int64, bool, []ratelimit.PolicyResult) (time.Time, error) {
	return time.Time{}, errors.New("connection refused")
}
func (observedDownStore) Refund(context.Context, string, []ratelimit.Policy, int64, time.Time) error {
	return errors.New("connection refused")
}
func (observedDownStore) Reset(context.Context, string, []ratelimit.Policy) error {
	return errors.New("connection refused")
}
func (s observedDownStore) Observer() *ratelimit.Observer { return s.obs }
