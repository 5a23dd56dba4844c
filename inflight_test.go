package ratelimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// inFlight is an in-flight policy of cap slots with a lifetime of a minute.
func inFlight(cap int64) ratelimit.Policy {
	return ratelimit.Policy{Name: "slots", Limit: cap, Window: time.Minute, Algorithm: algorithms.InFlight{}}
}

// freeSlots returns how many slots of l's in-flight policy are free for key.
func freeSlots(t *testing.T, l *ratelimit.Limiter, key string) int64 {
	t.Helper()
	d, err := l.Peek(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Results() {
		if r.Policy.Algorithm == (algorithms.InFlight{}) {
			return r.Remaining + 1 // Peek asks for one: Remaining counts it
		}
	}
	t.Fatal("the limiter has no in-flight policy")
	return 0
}

// gauge counts the requests inside a handler, and the most there ever were.
type gauge struct{ now, max, served atomic.Int64 }

func (g *gauge) handler(hold func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := g.now.Add(1)
		for m := g.max.Load(); n > m && !g.max.CompareAndSwap(m, n); m = g.max.Load() {
		}
		hold()
		g.served.Add(1)
		g.now.Add(-1)
	})
}

// Four instances (four limiters, each with a client of its own) and 64 goroutines on one key
// with 10 slots: never more than 10 requests run at once, counted inside the handler; every
// slot is free again at the end, and no key lives without a TTL.
func TestInFlightNeverExceedsCap(t *testing.T) {
	for _, e := range []struct {
		name  string
		store func(t *testing.T, prefix string) ratelimit.Store
	}{
		{"memory", func(t *testing.T, _ string) ratelimit.Store { return ratelimit.NewMemoryStore() }},
		{"redis", func(t *testing.T, prefix string) ratelimit.Store {
			c := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), PoolSize: 16})
			t.Cleanup(func() { c.Close() })
			return ratelimit.NewRedisStore(c, ratelimit.WithPrefix(prefix))
		}},
		{"cluster", func(t *testing.T, prefix string) ratelimit.Store {
			return ratelimit.NewRedisStore(redistest.Cluster(t), ratelimit.WithPrefix(prefix))
		}},
	} {
		t.Run(e.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			if e.name != "memory" {
				checker := redistest.Standalone(t)
				if e.name == "cluster" {
					t.Cleanup(func() { assertAllKeysExpire(t, redistest.Cluster(t), prefix) })
				} else {
					t.Cleanup(func() { assertAllKeysExpire(t, checker, prefix) })
				}
			}
			memory := e.store(t, prefix)
			var g gauge
			h := g.handler(func() { time.Sleep(50 * time.Microsecond) }) // long enough to overlap
			var limiters []*ratelimit.Limiter
			var handlers []http.Handler
			for i := 0; i < 4; i++ {
				store := memory // one process: the instances share the memory store
				if e.name != "memory" {
					store = e.store(t, prefix)
				}
				l := mustNew(t, store, inFlight(10))
				limiters = append(limiters, l)
				handlers = append(handlers, ratelimit.Middleware(l, ratelimit.WithKey(keyOfTest(t)), ratelimit.WithTimeout(10*time.Second))(h))
			}
			var refused atomic.Int64
			var wg sync.WaitGroup
			for w := 0; w < 64; w++ {
				wg.Add(1)
				go func(h http.Handler) {
					defer wg.Done()
					for i := 0; i < 20; i++ {
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
						switch rec.Code {
						case http.StatusOK:
						case http.StatusTooManyRequests:
							refused.Add(1)
						default:
							t.Errorf("status %d", rec.Code)
							return
						}
					}
				}(handlers[w%4])
			}
			wg.Wait()
			if m := g.max.Load(); m > 10 || m < 1 {
				t.Fatalf("at most %d requests ran at once; want 1 to 10", m)
			}
			if g.served.Load()+refused.Load() != 64*20 {
				t.Fatalf("%d served + %d refused; want 1280", g.served.Load(), refused.Load())
			}
			if n := freeSlots(t, limiters[0], keyOf(t)); n != 10 {
				t.Fatalf("%d slots free after the run; want all 10 back", n)
			}
			t.Logf("%d served, %d refused, at most %d at once", g.served.Load(), refused.Load(), g.max.Load())
		})
	}
}

// A slot comes back however its request ends: a panic, a client that went away, a handler
// error; and through the Limiter, with Release.
func TestInFlightSlotsComeBack(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		l := mustNew(t, store, inFlight(2))
		key := keyOf(t)
		serve := func(h http.Handler, r *http.Request) (code int) {
			defer func() {
				if recover() != nil {
					code = -1
				}
			}()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			return rec.Code
		}
		mw := ratelimit.Middleware(l, ratelimit.WithKey(keyOfTest(t)), ratelimit.WithTimeout(10*time.Second))
		get := func() *http.Request { return httptest.NewRequest("GET", "/", nil) }
		// The client goes away while the handler runs: it returns when it sees so.
		var cancel context.CancelFunc
		gone := func() *http.Request {
			c, cf := context.WithCancel(context.Background())
			cancel = cf
			return get().WithContext(c)
		}
		for _, c := range []struct {
			name    string
			handler http.HandlerFunc
			req     func() *http.Request
			code    int
		}{
			{"panic", func(http.ResponseWriter, *http.Request) { panic("boom") }, get, -1},
			{"client gone", func(w http.ResponseWriter, r *http.Request) {
				cancel()
				<-r.Context().Done()
			}, gone, http.StatusOK},
			{"error", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 500) }, get, 500},
			{"abort", func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) }, get, -1},
		} {
			for i := 0; i < 3; i++ { // more than the slots: a leak would show as a 429
				if got := serve(mw(c.handler), c.req()); got != c.code {
					t.Fatalf("%s #%d: %d; want %d", c.name, i, got, c.code)
				}
				if n := freeSlots(t, l, key); n != 2 {
					t.Fatalf("%s #%d: %d slots free after it; want 2", c.name, i, n)
				}
			}
		}
		d := allow(t, l, key, 1)
		if !ratelimit.Holds(d) || freeSlots(t, l, key) != 1 {
			t.Fatalf("Allow took no slot: %+v", d)
		}
		if err := l.Settle(ctx, key, d, d.Cost); err != nil {
			t.Fatal(err)
		}
		if n := freeSlots(t, l, key); n != 2 {
			t.Fatalf("%d slots free after Release; want 2", n)
		}
	})
}

// Rate and in-flight policies decide together, all or nothing: a request refused by the rate
// holds no slot, and one refused for want of a slot costs no rate quota.
func TestInFlightAllOrNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		rate := ratelimit.Policy{Name: "rate", Limit: 3, Window: time.Hour}
		l := mustNew(t, store, rate, inFlight(2))
		g, err := ratelimit.NewGuard(l, ratelimit.WithKey(keyOfTest(t)), ratelimit.WithTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		key := keyOf(t)
		req := ratelimit.HTTPRequest(httptest.NewRequest("GET", "/", nil))
		a, b := g.Check(req), g.Check(req) // two requests running
		if !a.Proceed || !b.Proceed {
			t.Fatalf("first two: %v %v", a.Status, b.Status)
		}
		c := g.Check(req)
		if c.Proceed || c.Decision.Policy.Name != "slots" {
			t.Fatalf("third, with both slots taken: proceed %v, bound by %q; want refused by the slots", c.Proceed, c.Decision.Policy.Name)
		}
		if r := c.Decision.Results()[0]; r.Remaining != 0 || !r.Allowed {
			t.Fatalf("the refused request's rate result %+v; want allowed with 0 left after it (1 left, not charged)", r)
		}
		g.Done(&a, 200)
		g.Done(&b, 200)
		d := g.Check(req) // the rate's third and last
		if !d.Proceed {
			t.Fatalf("third admitted request: %d", d.Status)
		}
		g.Done(&d, 200)
		e := g.Check(req)
		if e.Proceed || e.Decision.Policy.Name != "rate" {
			t.Fatalf("fourth: proceed %v, bound by %q; want refused by the rate", e.Proceed, e.Decision.Policy.Name)
		}
		if n := freeSlots(t, l, key); n != 2 {
			t.Fatalf("%d slots free after a rate refusal; want 2", n)
		}
	})
}

// An in-flight refusal says what it is: 429 (or the Response.InFlightStatus), Retry-After 1 (a slot
// comes back when any request ends), and the IETF policy entry with qu="concurrent-requests".
// A rate refusal stays 429 with its own Retry-After.
func TestInFlightResponse(t *testing.T) {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))
	l := mustNew(t, store, ratelimit.Policy{Name: "rate", Limit: 2, Window: time.Hour}, inFlight(1))
	for _, status := range []int{0, 503} {
		g, err := ratelimit.NewGuard(l, ratelimit.WithKey(keyOfTest(t)), ratelimit.WithResponse(ratelimit.Response{IETFDraft: 11, InFlightStatus: status}))
		if status == 0 {
			status = 429
		}
		if err != nil {
			t.Fatal(err)
		}
		req := ratelimit.HTTPRequest(httptest.NewRequest("GET", "/", nil))
		held := g.Check(req)
		refused := g.Check(req)
		w := httptest.NewRecorder()
		refused.Write(w)
		if w.Code != status || w.Header().Get("Retry-After") != "1" || w.Header().Get("X-RateLimit-Limit") != "1" {
			t.Errorf("in-flight refusal: %d, Retry-After %q, X-RateLimit-Limit %q; want %d, 1, 1", w.Code, w.Header().Get("Retry-After"), w.Header().Get("X-RateLimit-Limit"), status)
		}
		if p := w.Header().Get("RateLimit-Policy"); p != `"rate";q=2;w=3600, "slots";q=1;qu="concurrent-requests"` {
			t.Errorf("RateLimit-Policy %q", p)
		}
		g.Done(&held, 200)
		if o := g.Check(req); !o.Proceed {
			t.Fatalf("after the release: %d", o.Status)
		} else {
			g.Done(&o, 200)
		}
		w = httptest.NewRecorder()
		o := g.Check(req) // the rate is spent: 2 per hour, 2 admitted
		o.Write(w)
		if w.Code != 429 || w.Header().Get("Retry-After") == "1" {
			t.Errorf("rate refusal: %d, Retry-After %q; want 429 and the rate's wait", w.Code, w.Header().Get("Retry-After"))
		}
		if err := l.Reset(ctx, keyOf(t)); err != nil {
			t.Fatal(err)
		}
	}
	for name, o := range map[string]ratelimit.Option{"WaitForSlot": ratelimit.WaitForSlot(time.Second), "InFlightStatus": ratelimit.WithResponse(ratelimit.Response{InFlightStatus: 503})} {
		rateOnly := mustNew(t, store, ratelimit.Policy{Limit: 1, Window: time.Hour})
		if _, err := ratelimit.NewGuard(rateOnly, o); err == nil || !strings.Contains(err.Error(), "in-flight") {
			t.Errorf("%s on a limiter without an in-flight policy: %v; want an error", name, err)
		}
	}
	if _, err := ratelimit.NewGuard(l, ratelimit.WithResponse(ratelimit.Response{InFlightStatus: 500})); err == nil {
		t.Error("WithResponse(Response{InFlightStatus: 500}): no error")
	}
}

// An instance that dies holding slots (a process killed with SIGKILL) frees them when their
// lifetime ends, and not before. The child process is this test binary, in
// TestInFlightChildHoldsSlots; both run on a fake clock at t0, so the lifetime ends when this
// test says.
func TestInFlightKilledInstance(t *testing.T) {
	cmd, lines, prefix := startChild(t, "TestInFlightChildHoldsSlots")
	for lines.Scan() && !strings.Contains(lines.Text(), "holding 3 slots") {
	}
	if lines.Err() != nil {
		t.Fatal(lines.Err())
	}
	clock := fakeclock.New(fakeclock.T0)
	client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { client.Close() })
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithClock(clock)), inFlight(5))
	if n := freeSlots(t, l, "victim"); n != 2 {
		t.Fatalf("%d slots free while the child holds 3; want 2", n)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if n := freeSlots(t, l, "victim"); n != 2 {
		t.Fatalf("%d slots free after the kill, within the lifetime; want 2", n)
	}
	clock.Advance(time.Minute - time.Microsecond)
	if n := freeSlots(t, l, "victim"); n != 2 {
		t.Fatalf("%d slots free 1µs before the lifetime ends; want 2", n)
	}
	clock.Advance(time.Microsecond)
	if n := freeSlots(t, l, "victim"); n != 5 {
		t.Fatalf("%d slots free when the lifetime ended; want all 5", n)
	}
}

// TestInFlightChildHoldsSlots is the instance TestInFlightKilledInstance kills: it takes 3
// slots through the middleware, with handlers that never return, and waits to be killed.
func TestInFlightChildHoldsSlots(t *testing.T) {
	addr := os.Getenv("RATELIMIT_CHILD_REDIS")
	if addr == "" {
		t.Skip("run by TestInFlightKilledInstance")
	}
	client := redis.NewClient(&redis.Options{Addr: addr})
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(os.Getenv("RATELIMIT_CHILD_PREFIX")), ratelimit.WithClock(fakeclock.New(fakeclock.T0)))
	l := mustNew(t, store, inFlight(5))
	var running sync.WaitGroup
	h := ratelimit.Middleware(l, ratelimit.WithKey(func(ratelimit.Request) (string, error) { return "victim", nil }),
		ratelimit.WithTimeout(10*time.Second))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		running.Done()
		select {} // until killed
	}))
	running.Add(3)
	for i := 0; i < 3; i++ {
		go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}
	running.Wait()
	os.Stdout.WriteString("holding 3 slots\n")
	select {}
}

// A store call of the in-flight path that fails is reported, never a panic: renewing on a
// policy list without a slot is refused with a clear error.
func TestInFlightRenewRefusesRatePolicies(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Hour})
	d := allow(t, l, "k", 1)
	if ratelimit.Holds(d) {
		t.Fatal("a rate-only decision holds slots")
	}
	if err := l.Settle(ctx, "k", d, d.Cost); err != nil {
		t.Fatalf("Release of a decision without slots: %v", err)
	}
	if err := l.Settle(ctx, "", d, d.Cost); !errors.Is(err, ratelimit.ErrBadRequest) {
		t.Fatalf("Release with an empty key: %v", err)
	}
}

// While Redis is down the fallback holds the slots of its own decisions, under the instance's
// share of the cap, and they come back to it when their requests end.
func TestInFlightUnderFallback(t *testing.T) {
	f := newFaultyRedis(t, ratelimit.WithFallback(0.5), ratelimit.WithBreaker(1, time.Minute))
	l := mustNew(t, f.store, inFlight(4)) // half of 4: 2 slots here
	f.proxy.Refuse()
	take := func() ratelimit.Decision {
		c, cancel := generous()
		defer cancel()
		d, err := l.Allow(c, "k")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b := take(), take()
	if !a.Allowed || !b.Allowed || a.Source != observe.SourceFallback || !ratelimit.Holds(a) {
		t.Fatalf("two requests under the fallback: %+v, %+v; want both admitted by it, holding slots", a, b)
	}
	if c := take(); c.Allowed {
		t.Fatalf("a third with the fallback's 2 slots taken: admitted")
	}
	if err := l.Settle(ctx, "k", a, a.Cost); err != nil {
		t.Fatal(err)
	}
	if c := take(); !c.Allowed {
		t.Fatalf("after a release under the fallback: refused; the slot did not come back")
	}
}

// During an outage the fallback scales each policy list once: a check and the release of its
// in-flight slots use two lists that start alike, and neither evicts the other, whichever
// policy comes first (before, [InFlight, GCRA] recompiled on every call: 20 times for 10
// checks and 10 releases).
func TestFallbackScalesEachListOnce(t *testing.T) {
	f := newFaultyRedis(t, ratelimit.WithFallback(0.5), ratelimit.WithBreaker(1, time.Minute))
	gcra := ratelimit.Policy{Name: "rate", Limit: 1000, Window: time.Second}
	f.proxy.Refuse()
	for i, policies := range [][]ratelimit.Policy{{inFlight(4), gcra}, {gcra, inFlight(4)}} {
		l := mustNew(t, f.store, policies...)
		for range 10 {
			c, cancel := generous()
			d, err := l.Allow(c, "k")
			if err != nil || !d.Allowed || d.Source != observe.SourceFallback {
				t.Fatalf("%v: %+v, %v; want admitted by the fallback", policies, d, err)
			}
			if err := l.Settle(c, "k", d, d.Cost); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
		if got, want := ratelimit.FallbackLists(f.store), 2*(i+1); got != want {
			t.Errorf("%v: the fallback scaled %d lists so far; want %d (each list once: the policies, the in-flight policy alone)",
				policies, got, want)
		}
	}
}

// A request that a rate policy denies while the in-flight policy has no slot either is a
// refusal by the rate: 429 (not the Response.InFlightStatus), and the rate's Retry-After (not the "try
// again in 1 s" of a slot), though the lifetime of the slot ends later than the rate's wait and
// so binds the decision. It was answered 503 with Retry-After: 1, a retry the rate refuses
// again (found by a review).
func TestInFlightDenialMasksNoRateDenial(t *testing.T) {
	clock := newFakeClock()
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)),
		ratelimit.Policy{Name: "rate", Limit: 1, Window: 10 * time.Second, Algorithm: algorithms.SlidingLog{}}, inFlight(1))
	for _, status := range []int{0, http.StatusServiceUnavailable} {
		opts := []ratelimit.Option{ratelimit.WithKey(keyOfTest(t))}
		if status != 0 {
			opts = append(opts, ratelimit.WithResponse(ratelimit.Response{InFlightStatus: status}))
		}
		g, err := ratelimit.NewGuard(l, opts...)
		if err != nil {
			t.Fatal(err)
		}
		req := ratelimit.HTTPRequest(httptest.NewRequest("GET", "/", nil))
		held := g.Check(req) // takes the slot, and the rate's one request per 10 s
		if !held.Proceed {
			t.Fatalf("the first request: %d", held.Status)
		}
		clock.Advance(time.Second)
		refused := g.Check(req)
		if d := refused.Decision; d.Allowed || d.Policy.Name != "slots" {
			t.Fatalf("the second request: allowed %v, binding %q; want denied, the slot's lifetime (59 s) binding", d.Allowed, d.Policy.Name)
		}
		w := httptest.NewRecorder()
		refused.Write(w)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "9" {
			t.Errorf("WithResponse(Response{InFlightStatus: %d}), refused by the rate (9 s) and the slot: %d, Retry-After %q; want 429, 9", status, w.Code, w.Header().Get("Retry-After"))
		}
		g.Done(&held, http.StatusOK)
		if err := l.Reset(ctx, keyOf(t)); err != nil {
			t.Fatal(err)
		}
	}
}

// failingFrom is a store that fails every check from the nth on (counting from 1), as Redis
// going away while a request waits for a slot.
type failingFrom struct {
	ratelimit.Store
	n, checks atomic.Int64
}

func (s *failingFrom) Check(ctx context.Context, key string, policies []ratelimit.Policy, cost int64, charge bool, out []ratelimit.PolicyResult) (time.Time, error) {
	if s.checks.Add(1) >= s.n.Load() {
		return time.Time{}, errors.New("connection refused")
	}
	return s.Store.Check(ctx, key, policies, cost, charge, out)
}

func (s *failingFrom) Unwrap() ratelimit.Store { return s.Store }

// A request that waits for a slot and fails open because the store failed meanwhile proceeds
// as any request the store failed: unlimited, with no decision for its handler and no
// rate-limit headers. Its handler was handed the denial it had while it waited, as if the
// limiter had decided (found by a review).
func TestSlotWaitFailsOpenWithoutADecision(t *testing.T) {
	store := &failingFrom{Store: ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))}
	store.n.Store(3) // the first request's check, the second's, then its first check again
	l := mustNew(t, store, inFlight(1))
	var (
		handled bool
		decided bool
		gotD    ratelimit.Decision
	)
	g, err := ratelimit.NewGuard(l, ratelimit.WithKey(keyOfTest(t)), ratelimit.WaitForSlot(time.Second),
		ratelimit.WithErrorHandler(func(ratelimit.Request, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	held := g.Check(ratelimit.HTTPRequest(httptest.NewRequest("GET", "/", nil)))
	if !held.Proceed {
		t.Fatalf("the first request: %d", held.Status)
	}
	h := ratelimit.FromGuard(g)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		handled = true
		gotD, decided = ratelimit.DecisionFrom(r.Context())
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != http.StatusOK || !handled {
		t.Fatalf("the store failed during the wait, fail-open: %d, handled %v; want 200, handled", w.Code, handled)
	}
	if decided {
		t.Errorf("the handler was handed a decision (allowed %v, limit %d) though no limit decided the request", gotD.Allowed, gotD.Limit)
	}
	if v := w.Header().Get("X-RateLimit-Limit"); v != "" {
		t.Errorf("X-RateLimit-Limit %q on a request no limit decided", v)
	}
	g.Done(&held, http.StatusOK)
}

// A refusal answered with Response.InFlightStatus 503 says the service is busy, in its body as in its
// status: it used to read "Too Many Requests: Rate limit exceeded", and its problem document
// said "status":429 on a 503 response. At 429 the body stays a rate limit's.
func TestInFlightStatusBody(t *testing.T) {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))
	l := mustNew(t, store, ratelimit.Policy{Name: "rate", Limit: 100, Window: time.Hour}, inFlight(1))
	for _, tc := range []struct {
		status  int
		problem bool
		want    string
	}{
		{503, false, "Service Unavailable: too many requests are in progress. Retry in 1 second.\n"},
		{503, true, `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"too many requests are in progress. Retry in 1 second."}` + "\n"},
		{429, false, "Too Many Requests: Rate limit exceeded. Retry in 1 second.\n"},
	} {
		g, err := ratelimit.NewGuard(l, ratelimit.WithKey(keyOfTest(t)), ratelimit.WithResponse(ratelimit.Response{InFlightStatus: tc.status, ProblemJSON: tc.problem}))
		if err != nil {
			t.Fatal(err)
		}
		req := ratelimit.HTTPRequest(httptest.NewRequest("GET", "/", nil))
		held := g.Check(req)
		w := httptest.NewRecorder()
		refused := g.Check(req)
		refused.Write(w)
		if w.Code != tc.status || w.Body.String() != tc.want {
			t.Errorf("WithResponse(Response{InFlightStatus: %d}), problem %v: %d %q; want %d %q", tc.status, tc.problem, w.Code, w.Body.String(), tc.status, tc.want)
		}
		g.Done(&held, 200)
	}
}
