package ratelimit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

func TestNewGuardOptionErrors(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 10, Window: time.Minute})
	shaping := ratelimit.Policy{Name: "queue", Limit: 10, Window: time.Second, Algorithm: algorithms.LeakyBucket{Shaping: true}}
	for _, c := range []struct {
		opts []ratelimit.Option
		want string
	}{
		{[]ratelimit.Option{ratelimit.WithPolicies()}, "ratelimit: WithPolicies(): give it at least one policy"},
		{[]ratelimit.Option{ratelimit.WithPolicies(ratelimit.Policy{Limit: 0, Window: time.Minute})}, `ratelimit: WithPolicies: invalid policy "gcra-0-per-1m": Limit is 0; it must be at least 1`},
		{[]ratelimit.Option{ratelimit.WithKey(nil)}, "ratelimit: WithKey(nil): give it a key function"},
		{[]ratelimit.Option{ratelimit.RejectMissingKey(200)}, "ratelimit: RejectMissingKey(200): the status must be a 4xx client error"},
		{[]ratelimit.Option{ratelimit.WithCost(nil)}, "ratelimit: WithCost(nil)"},
		{[]ratelimit.Option{ratelimit.FailClosed(500)}, "ratelimit: FailClosed(500): the status must be 503 or 429"},
		{[]ratelimit.Option{ratelimit.WithTimeout(0)}, "ratelimit: WithTimeout(0s): the timeout must be positive"},
		{[]ratelimit.Option{ratelimit.WithErrorHandler(nil)}, "ratelimit: WithErrorHandler(nil)"},
		{[]ratelimit.Option{ratelimit.WithDenyResponse(nil)}, "ratelimit: WithDenyResponse(nil)"},
		{[]ratelimit.Option{ratelimit.WithHeaders(8)}, "ratelimit: WithHeaders(8): unknown header style"},
		{[]ratelimit.Option{ratelimit.WithSkip(nil)}, "ratelimit: WithSkip(nil)"},
		{[]ratelimit.Option{ratelimit.CountIf(nil)}, "ratelimit: CountIf(nil)"},
		{[]ratelimit.Option{ratelimit.WithNow(nil)}, "ratelimit: WithNow(nil)"},
		{[]ratelimit.Option{ratelimit.WithFallbackKey(nil)}, "ratelimit: WithFallbackKey(nil): give it a key function"},
		{[]ratelimit.Option{ratelimit.WithFallbackKey(ratelimit.KeyByIP()), ratelimit.RejectMissingKey(401)},
			"ratelimit: WithFallbackKey cannot be combined with RejectMissingKey(401)"},
		{[]ratelimit.Option{ratelimit.RejectMissingKey(400), ratelimit.WithFallbackKey(ratelimit.KeyByIP())},
			"ratelimit: WithFallbackKey cannot be combined with RejectMissingKey(400)"},
		{[]ratelimit.Option{nil}, "ratelimit: option 1 is nil"},
		{[]ratelimit.Option{ratelimit.WithPolicies(shaping), ratelimit.CountIf(func(int) bool { return true })},
			`ratelimit: CountIf cannot be combined with the shaping policy "queue"`},
		{[]ratelimit.Option{ratelimit.WithTimeout(-1), ratelimit.FailClosed(418)}, // every error, one a line
			"ratelimit: WithTimeout(-1ns): the timeout must be positive\nratelimit: FailClosed(418)"},
	} {
		g, err := ratelimit.NewGuard(l, c.opts...)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("got %v, %v; want an error starting %q", g, err, c.want)
		}
	}
	if _, err := ratelimit.NewGuard(l, ratelimit.WithPolicies(ratelimit.Policy{Limit: 0, Window: time.Minute})); !errors.Is(err, ratelimit.ErrInvalidPolicy) {
		t.Errorf("got %v, want it to wrap ErrInvalidPolicy", err)
	}
	if _, err := ratelimit.NewGuard(nil); err == nil || !strings.Contains(err.Error(), "the limiter is nil") {
		t.Errorf("NewGuard(nil): got %v", err)
	}
	if _, err := ratelimit.NewMiddleware(l, ratelimit.WithTimeout(0)); err == nil {
		t.Error("NewMiddleware accepted an invalid option")
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "WithTimeout(0s)") {
			t.Errorf("Middleware: got panic %v, want one naming the option", r)
		}
	}()
	ratelimit.Middleware(l, ratelimit.WithTimeout(0))
}

func TestGuardWithPolicies(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 10, Window: time.Minute})
	g, err := ratelimit.NewGuard(l, ratelimit.WithPolicies(ratelimit.Policy{Name: "route", Limit: 1, Window: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Limiter().Policies(); len(got) != 1 || got[0].Name != "route" || g.Limiter().Store() != l.Store() {
		t.Errorf("got policies %v over store %v, want the route's over the limiter's store", got, g.Limiter().Store())
	}
}

// TestOutcomeHeaders: Outcome.Headers, for the adapters, gives what Outcome.Write writes, under
// names that http.Header finds.
func TestOutcomeHeaders(t *testing.T) {
	clock := newFakeClock()
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), fixed(1, time.Minute, "minute"), fixed(5, time.Hour, "hour"))
	g, err := ratelimit.NewGuard(l, ratelimit.WithNow(clock.Now), ratelimit.WithHeaders(ratelimit.XRateLimitHeaders|ratelimit.IETFDraftHeaders))
	if err != nil {
		t.Fatal(err)
	}
	req := ratelimit.HTTPRequest(httptest.NewRequest(http.MethodGet, "/", nil))
	for i, want := range []http.Header{
		{
			"X-Ratelimit-Limit": {"1"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1699999260"},
			"Ratelimit-Policy": {`"minute";q=1;w=60, "hour";q=5;w=3600`}, "Ratelimit": {`"minute";r=0;t=60`},
		},
		{
			"X-Ratelimit-Limit": {"1"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1699999260"},
			"Ratelimit-Policy": {`"minute";q=1;w=60, "hour";q=5;w=3600`}, "Ratelimit": {`"minute";r=0;t=60`},
			"Retry-After": {"60"},
		},
	} {
		o := g.Check(req)
		if o.Proceed != (i == 0) || o.Decision.Limit != 1 || o.Err != nil {
			t.Errorf("check %d: got %+v", i, o)
		}
		got := http.Header{}
		o.Headers(func(name, value string) {
			if textproto.CanonicalMIMEHeaderKey(name) != name && !strings.Contains(name, "RateLimit") {
				t.Errorf("unexpected spelling %q", name)
			}
			got.Add(name, value)
		})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("check %d: Headers gave %v, want %v", i, got, want)
		}
		w := httptest.NewRecorder()
		o.Write(w)
		delete(w.Header(), "Content-Type")
		delete(w.Header(), "X-Content-Type-Options")
		if !reflect.DeepEqual(w.Header(), want) {
			t.Errorf("check %d: Write wrote %v, want %v", i, w.Header(), want)
		}
		g.Done(&o, http.StatusOK) // nothing to do without CountIf
	}
}

// TestGuardDoneOnce: with CountIf, Done refunds once, whatever the caller does.
func TestGuardDoneOnce(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), fixed(3, time.Minute, "minute"))
	g, err := ratelimit.NewGuard(l, ratelimit.CountIf(func(s int) bool { return s == http.StatusUnauthorized }))
	if err != nil {
		t.Fatal(err)
	}
	req := ratelimit.HTTPRequest(httptest.NewRequest(http.MethodGet, "/", nil))
	failed := g.Check(req)
	g.Done(&failed, http.StatusUnauthorized) // counts: keeps its charge
	ok := g.Check(req)
	g.Done(&ok, http.StatusOK) // does not count: refunded, once
	g.Done(&ok, http.StatusOK)
	if o := g.Check(req); !o.Proceed || o.Decision.Remaining != 1 {
		t.Errorf("after one counted and one refunded request: got proceed %v, remaining %d; want true, 1", o.Proceed, o.Decision.Remaining)
	}
}

// TestCountIfConcurrent: requests in flight hold their charge, so a burst of concurrent
// failed logins never gets past the limit; successful ones give their charge back.
func TestCountIfConcurrent(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		l := mustNew(t, store, ratelimit.Policy{Limit: 5, Window: time.Minute})
		release := make(chan struct{})
		var reached atomic.Int64
		login := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached.Add(1)
			<-release // every admitted login is in flight at once
			w.WriteHeader(http.StatusUnauthorized)
		})
		h := ratelimit.Middleware(l, ratelimit.CountIf(func(s int) bool { return s == http.StatusUnauthorized }))(login)
		var wg sync.WaitGroup
		codes := make(chan int, 200)
		for range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/login", nil))
				codes <- w.Code
			}()
		}
		for reached.Load() < 5 && len(codes) < 195 {
			runtime.Gosched()
		}
		close(release)
		wg.Wait()
		if n := reached.Load(); n > 5 {
			t.Fatalf("%d concurrent failed logins reached the handler; the limit is 5", n)
		}

		// Successful requests do not count: their charge comes back.
		ok := ratelimit.Middleware(l, ratelimit.CountIf(func(s int) bool { return s == http.StatusUnauthorized }))(okHandler)
		clock.Advance(time.Hour)
		for i := 0; i < 20; i++ {
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/login", nil)
			ok.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				t.Fatalf("successful login %d: status %d", i, w.Code)
			}
		}
	})
}

// TestCountIfSeesTheStatus runs count-by-outcome through handlers that answer in every way.
func TestCountIfSeesTheStatus(t *testing.T) {
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		counted bool
	}{
		{"WriteHeader", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) }, true},
		{"interim response first", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(103); w.WriteHeader(401) }, true},
		{"Write only", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hi")) }, false},
		{"nothing", func(w http.ResponseWriter, r *http.Request) {}, false},
		{"Flush", func(w http.ResponseWriter, r *http.Request) { w.(http.Flusher).Flush(); w.WriteHeader(401) }, false},
		{"ResponseController", func(w http.ResponseWriter, r *http.Request) {
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Error(err)
			}
		}, false},
		{"Hijack unsupported", func(w http.ResponseWriter, r *http.Request) {
			if _, _, err := w.(http.Hijacker).Hijack(); err == nil {
				t.Error("a recorder was hijacked")
			}
			w.WriteHeader(401)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := mustNew(t, ratelimit.NewMemoryStore(), fixed(1, time.Minute, "minute"))
			h := ratelimit.Middleware(l, ratelimit.CountIf(func(s int) bool { return s == 401 }))(c.handler)
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
			if counted := w.Code == 429; counted != c.counted {
				t.Errorf("counted: got %v, want %v", counted, c.counted)
			}
		})
	}
}

// TestDefaultErrorHandler: errors are logged, at most once a second.
func TestDefaultErrorHandler(t *testing.T) {
	var buf bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	l := mustNew(t, errStore{errors.New("disk on fire")}, ratelimit.Policy{Limit: 1, Window: time.Minute})
	h := ratelimit.Middleware(l)(okHandler)
	for range 50 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}
	logged := strings.Count(buf.String(), "\n")
	if logged < 1 || logged > 2 || !strings.Contains(buf.String(), `msg="ratelimit: the store failed; the request was let through (fail-open)" error="ratelimit: store: disk on fire"`) {
		t.Errorf("logged %d lines, want 1 or 2:\n%s", logged, buf.String())
	}
}

// TestGuardAllocations holds the allowed path with the memory store to its allocation budget.
func TestGuardAllocations(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1e9, Window: time.Hour})
	h := ratelimit.Middleware(l)(okHandler)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	w := &discardWriter{h: http.Header{}}
	if n := testing.AllocsPerRun(1000, func() { clear(w.h); h.ServeHTTP(w, r) }); n > 6 {
		t.Errorf("the middleware allocates %v times per request, want at most 6", n)
	}
}

func TestSkipDoesNotTouchTheStore(t *testing.T) {
	l := mustNew(t, errStore{errors.New("must not be called")}, ratelimit.Policy{Limit: 1, Window: time.Minute})
	g, err := ratelimit.NewGuard(l, ratelimit.WithSkip(func(ratelimit.Request) bool { return true }),
		ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { t.Error(err) }))
	if err != nil {
		t.Fatal(err)
	}
	o := g.Check(ratelimit.HTTPRequest(httptest.NewRequest(http.MethodGet, "/", nil).WithContext(context.Background())))
	if !o.Proceed || o.Decision.Limit != 0 {
		t.Errorf("got %+v, want to proceed unchecked", o)
	}
}

// TestGuardNegativeCost: a negative cost is a refused request with no decision, and the
// default error handler says so, not that the store failed.
func TestGuardNegativeCost(t *testing.T) {
	var buf bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	l := mustNew(t, errStore{errors.New("must not be called")}, ratelimit.Policy{Limit: 1, Window: time.Minute})
	g, err := ratelimit.NewGuard(l, ratelimit.WithCost(func(ratelimit.Request) int64 { return -3 }))
	if err != nil {
		t.Fatal(err)
	}
	o := g.Check(ratelimit.HTTPRequest(httptest.NewRequest(http.MethodGet, "/", nil)))
	if o.Proceed || o.Status != http.StatusBadRequest || o.Decision.Limit != 0 || o.Err == nil ||
		o.Err.Error() != "ratelimit: cost: the cost function returned -3; a cost cannot be negative" {
		t.Errorf("got %+v, want a 400 refusal with the cost error", o)
	}
	o.Headers(func(name, value string) {
		t.Errorf("header %s: %s written on a refusal without a decision", name, value)
	})
	if !strings.Contains(buf.String(), `msg="ratelimit: request answered 400: its cost is negative"`) {
		t.Errorf("logged %q, want the 400 explained", buf.String())
	}
}
