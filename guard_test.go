package ratelimit_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/observe"
)

func TestNewGuardOptionErrors(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 10, Window: time.Minute})
	shaping := ratelimit.Policy{Name: "queue", Limit: 10, Window: time.Second, Algorithm: algorithms.LeakyBucket{Shaping: true}}
	for _, c := range []struct {
		opts []ratelimit.Option
		want string // what follows "ratelimit: NewGuard: "
	}{
		{[]ratelimit.Option{ratelimit.WithPolicies()}, "WithPolicies(): give it at least one policy"},
		{[]ratelimit.Option{ratelimit.WithPolicies(ratelimit.Policy{Limit: 0, Window: time.Minute})}, `WithPolicies: ratelimit: invalid policy "gcra-0-per-1m": Limit is 0; it must be at least 1`},
		{[]ratelimit.Option{ratelimit.WithPolicies(ratelimit.Policy{Name: "a", Limit: 1, Window: time.Minute}, ratelimit.Policy{Name: "a", Limit: 2, Window: time.Hour})}, `WithPolicies: ratelimit: invalid policy "a": two policies have this name`},
		{[]ratelimit.Option{ratelimit.WithKey(nil)}, "WithKey(nil): give it a key function"},
		{[]ratelimit.Option{ratelimit.WithAccess(ratelimit.Access{MissingKey: 200})}, "WithAccess: MissingKey 200: the status must be a 4xx client error"},
		{[]ratelimit.Option{ratelimit.WithAccess(ratelimit.Access{MissingKey: 503})}, "WithAccess: MissingKey 503: the status must be a 4xx client error"},
		{[]ratelimit.Option{ratelimit.WithCost(nil)}, "WithCost(nil): give it a function"},
		{[]ratelimit.Option{ratelimit.WithResponse(ratelimit.Response{FailClosed: 500})}, "WithResponse: FailClosed is 500; it must be 503 or 429"},
		{[]ratelimit.Option{ratelimit.WithTimeout(0)}, "WithTimeout(0s): the timeout must be positive"},
		{[]ratelimit.Option{ratelimit.WithErrorHandler(nil)}, "WithErrorHandler(nil): give it a function"},
		{[]ratelimit.Option{ratelimit.WithResponse(ratelimit.Response{IETFDraft: 12})}, "WithResponse: IETFDraft is 12; give 11 (the latest draft), 10, or 0 for none"},
		{[]ratelimit.Option{ratelimit.WithResponse(ratelimit.Response{IETFDraft: -1})}, "WithResponse: IETFDraft is -1; give 11 (the latest draft), 10, or 0 for none"},
		{[]ratelimit.Option{ratelimit.WithResponse(ratelimit.Response{InFlightStatus: 500})}, "WithResponse: InFlightStatus is 500; it must be 503 or 429"},
		{[]ratelimit.Option{ratelimit.WithAccess(ratelimit.Access{})}, "WithAccess: the Access lists nothing: give it networks or keys to allow or deny, a Skip function or a MissingKey status"},
		{[]ratelimit.Option{ratelimit.CountIf(nil)}, "CountIf(nil): give it a function"},
		{[]ratelimit.Option{ratelimit.TrustProxies("X-Forwarded-For")}, `TrustProxies("X-Forwarded-For"): name at least one proxy`},
		{[]ratelimit.Option{ratelimit.TrustProxies("10.0.0.0/8")}, `TrustProxies: "10.0.0.0/8" is not a valid header name`},
		{[]ratelimit.Option{ratelimit.TrustProxies("X-Real-IP", "10.0.0.0/33")}, `TrustProxies: "10.0.0.0/33" is neither a CIDR prefix nor an IP address`},
		{[]ratelimit.Option{ratelimit.IPv6Prefix(0)}, "IPv6Prefix(0): bits must be between 1 and 128"},
		{[]ratelimit.Option{ratelimit.IPv6Prefix(129)}, "IPv6Prefix(129): bits must be between 1 and 128"},
		{[]ratelimit.Option{nil}, "option 1 is nil"},
		{[]ratelimit.Option{ratelimit.WithPolicies(shaping), ratelimit.CountIf(func(int) bool { return true })},
			`CountIf cannot be combined with the shaping policy "queue"`},
		// Every error, in order.
		{[]ratelimit.Option{ratelimit.WithTimeout(-1), ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true, FailClosed: 418}), ratelimit.IPv6Prefix(0)},
			"3 invalid options: WithTimeout(-1ns): the timeout must be positive; WithResponse: FailClosed is 418; it must be 503 or 429; IPv6Prefix(0): bits must be between 1 and 128"},
	} {
		g, err := ratelimit.NewGuard(l, c.opts...)
		if want := "ratelimit: NewGuard: " + c.want; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("got %v, %v; want an error starting %q", g, err, want)
		}
	}
	if _, err := ratelimit.NewGuard(nil); err == nil || !strings.Contains(err.Error(), "the limiter is nil") {
		t.Errorf("NewGuard(nil): got %v", err)
	}
	if g, err := ratelimit.NewGuard(l, ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true}), ratelimit.TrustProxies("Forwarded", "unix"), ratelimit.IPv6Prefix(128)); err != nil || g == nil {
		t.Errorf("valid options: got %v, %v", g, err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "ratelimit: NewGuard: WithTimeout(0s)") {
			t.Errorf("Middleware: got panic %v, want one naming the option", r)
		}
	}()
	ratelimit.Middleware(l, ratelimit.WithTimeout(0))
}

// TestGuardWithPolicies: a guard with its own policies checks those, over the limiter's store.
func TestGuardWithPolicies(t *testing.T) {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))
	l := mustNew(t, store, ratelimit.Policy{Limit: 10, Window: time.Minute})
	route := ratelimit.Policy{Name: "route", Limit: 1, Window: time.Second}
	g, err := ratelimit.NewGuard(l, ratelimit.WithPolicies(route))
	if err != nil {
		t.Fatal(err)
	}
	req := ratelimit.HTTPRequest(httptest.NewRequest(http.MethodGet, "/", nil))
	if o := g.Check(req); !o.Proceed || o.Decision.Policy.Name != "route" || len(o.Decision.Results()) != 1 || o.Decision.Limit != 1 {
		t.Errorf("got %+v, want the route's policy alone", o.Decision)
	}
	// The charge is in the limiter's store, under the route's policy, and not the limiter's.
	if d, err := mustNew(t, store, route).Peek(ctx, "ip:192.0.2.1"); err != nil || d.Allowed {
		t.Errorf("the route's policy over the store: got %+v, %v; want the guard's request charged there", d, err)
	}
	if d, err := l.Peek(ctx, "ip:192.0.2.1"); err != nil || d.Remaining != 9 { // 9 after the request Peek asks about
		t.Errorf("the limiter's own policy: got %+v, %v; want nothing charged", d, err)
	}
}

// TestOutcomeHeaders: Outcome.Headers, for the adapters, gives what Outcome.Write writes, under
// names that http.Header finds.
func TestOutcomeHeaders(t *testing.T) {
	clock := newFakeClock()
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), fixed(1, time.Minute, "minute"), fixed(5, time.Hour, "hour"))
	g, err := ratelimit.NewGuard(l, ratelimit.WithResponse(ratelimit.Response{IETFDraft: 11}))
	if err != nil {
		t.Fatal(err)
	}
	req := ratelimit.HTTPRequest(httptest.NewRequest(http.MethodGet, "/", nil))
	reset := strconv.FormatInt(t0.Add(time.Minute).Unix(), 10)
	for i, want := range []http.Header{
		{
			"X-Ratelimit-Limit": {"1"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {reset},
			"Ratelimit-Policy": {`"minute";q=1;w=60, "hour";q=5;w=3600`}, "Ratelimit": {`"minute";r=0;t=60`},
		},
		{
			"X-Ratelimit-Limit": {"1"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {reset},
			"Ratelimit-Policy": {`"minute";q=1;w=60, "hour";q=5;w=3600`}, "Ratelimit": {`"minute";r=0;t=60`},
			"Retry-After": {"60"}, "Content-Type": {"text/plain; charset=utf-8"}, "X-Content-Type-Options": {"nosniff"},
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
		if !reflect.DeepEqual(w.Header(), want) {
			t.Errorf("check %d: Write wrote %v, want %v", i, w.Header(), want)
		}
		g.Done(&o, http.StatusOK) // nothing to do without CountIf
	}
}

// TestGuardDoneOnce: with CountIf, Done refunds once, whatever the caller does.
func TestGuardDoneOnce(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())), fixed(3, time.Minute, "minute"))
	g, err := ratelimit.NewGuard(l, ratelimit.CountIf(func(s int) bool { return s == http.StatusUnauthorized }))
	if err != nil {
		t.Fatal(err)
	}
	req := ratelimit.HTTPRequest(httptest.NewRequest(http.MethodGet, "/", nil))
	failed := g.Check(req)
	if !failed.Pending {
		t.Fatalf("got %+v, want an outcome pending the handler's status", failed)
	}
	g.Done(&failed, http.StatusUnauthorized) // counts: keeps its charge
	ok := g.Check(req)
	g.Done(&ok, http.StatusOK) // does not count: refunded, once
	if ok.Pending {
		t.Error("the outcome is still pending after Done")
	}
	g.Done(&ok, http.StatusOK)
	if o := g.Check(req); !o.Proceed || o.Decision.Remaining != 1 {
		t.Errorf("after one counted and one refunded request: got proceed %v, remaining %d; want true, 1", o.Proceed, o.Decision.Remaining)
	}
}

// TestCountIfConcurrent: requests in flight hold their charge, so a burst of concurrent
// failed logins never gets past the limit; successful ones give their charge back. The store
// has all the time it needs, and fails closed: a slow store lets nothing through.
func TestCountIfConcurrent(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		const limit, requests = 5, 200
		l := mustNew(t, store, ratelimit.Policy{Limit: limit, Window: time.Minute})
		opts := []ratelimit.Option{
			ratelimit.CountIf(func(s int) bool { return s == http.StatusUnauthorized }),
			ratelimit.WithTimeout(time.Minute), ratelimit.WithResponse(ratelimit.Response{FailClosed: http.StatusServiceUnavailable}),
			ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { t.Errorf("reported: %v", err) }),
		}
		release := make(chan struct{})
		var reached atomic.Int64
		login := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached.Add(1)
			<-release // every admitted login is in flight at once
			w.WriteHeader(http.StatusUnauthorized)
		})
		h := ratelimit.Middleware(l, opts...)(login)
		var wg sync.WaitGroup
		codes := make(chan int, requests)
		for range requests {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/login", nil))
				codes <- w.Code
			}()
		}
		// Wait until every request but the admitted ones has been answered: then every
		// admitted one is in the handler.
		for len(codes) < requests-limit && reached.Load() <= limit {
			runtime.Gosched()
		}
		close(release)
		wg.Wait()
		close(codes)
		count := map[int]int{}
		for c := range codes {
			count[c]++
		}
		if n := reached.Load(); n != limit || count[401] != limit || count[429] != requests-limit {
			t.Fatalf("%d concurrent failed logins reached the handler, statuses %v; want %d, and %d refused", n, count, limit, requests-limit)
		}

		// Successful requests do not count: their charge comes back.
		ok := ratelimit.Middleware(l, opts...)(okHandler)
		clock.Advance(time.Hour)
		for i := range 4 * limit {
			w := httptest.NewRecorder()
			ok.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/login", nil))
			if w.Code != http.StatusOK {
				t.Fatalf("successful login %d: status %d", i, w.Code)
			}
		}
	})
}

// clockedErrStore is a store that always fails, on clock.
type clockedErrStore struct {
	errStore
	clock ratelimit.Clock
}

func (s clockedErrStore) Clock() ratelimit.Clock { return s.clock }

// TestDefaultErrorHandler: errors are logged, at most once a second of the store's clock, with
// the number not logged since.
func TestDefaultErrorHandler(t *testing.T) {
	var buf bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	clock := newFakeClock()
	l := mustNew(t, clockedErrStore{errStore{errors.New("disk on fire")}, clock}, ratelimit.Policy{Limit: 1, Window: time.Minute})
	h := ratelimit.Middleware(l)(okHandler)
	serve := func(n int) {
		for range n {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
			if w.Code != http.StatusOK {
				t.Fatalf("got status %d, want 200: fail-open", w.Code)
			}
		}
	}
	const msg = `level=WARN msg="ratelimit: the store failed; the request was let through unlimited (fail-open)" kind=other error="ratelimit: store: other: disk on fire"`
	serve(50)
	clock.Advance(999 * time.Millisecond)
	serve(10)
	if got, want := buf.String(), msg+" not_logged_since=0\n"; !strings.HasSuffix(got, want) || strings.Count(got, "\n") != 1 {
		t.Fatalf("logged:\n%s\nwant one line ending %q", got, want)
	}
	clock.Advance(time.Millisecond) // the next second
	serve(1)
	if lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"); len(lines) != 2 || !strings.HasSuffix(lines[1], msg+" not_logged_since=59") {
		t.Errorf("logged:\n%s\nwant a second line ending %q", buf.String(), msg+" not_logged_since=59")
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
	g, err := ratelimit.NewGuard(l, ratelimit.WithAccess(ratelimit.Access{Skip: func(ratelimit.Request) bool { return true }}),
		ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { t.Error(err) }))
	if err != nil {
		t.Fatal(err)
	}
	o := g.Check(ratelimit.HTTPRequest(httptest.NewRequest(http.MethodGet, "/", nil)))
	if !o.Proceed || o.Decision.Limit != 0 || o.Err != nil || o.Pending {
		t.Errorf("got %+v, want to proceed unchecked", o)
	}
	o.Headers(func(name, value string) { t.Errorf("header %s: %s written on a skipped request", name, value) })
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
	if o.Proceed || o.Status != http.StatusBadRequest || o.Decision.Limit != 0 || !errors.Is(o.Err, ratelimit.ErrBadRequest) ||
		o.Err.Error() != "ratelimit: cost: the cost function returned -3; a cost cannot be negative" {
		t.Errorf("got %+v, want a 400 refusal with the cost error", o)
	}
	var names []string
	o.Headers(func(name, value string) { names = append(names, name) })
	if want := []string{"Content-Type", "X-Content-Type-Options"}; !reflect.DeepEqual(names, want) {
		t.Errorf("headers of a refusal without a decision: got %v, want %v", names, want)
	}
	if !strings.Contains(buf.String(), `msg="ratelimit: request answered 400: its cost is negative"`) {
		t.Errorf("logged %q, want the 400 explained", buf.String())
	}
}

// TestGuardRetryAfterIsTrue holds Retry-After to the truth for every rate algorithm: a request
// sent Retry-After seconds later is admitted, one sent a second earlier is not. (An in-flight
// slot comes back when any request ends: its Retry-After is 1, see inflight_test.go.)
func TestGuardRetryAfterIsTrue(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, alg := range rateAlgorithms {
			for _, offset := range []time.Duration{0, 1, 333 * time.Millisecond, 999999 * time.Microsecond} {
				t.Run(alg.Name()+"/"+offset.String(), func(t *testing.T) {
					clock.Set(t0.Add(offset))
					l := mustNew(t, store, ratelimit.Policy{Name: "p" + strconv.Itoa(int(offset)), Limit: 3, Window: 7 * time.Second, Algorithm: alg})
					g, err := ratelimit.NewGuard(l, ratelimit.WithKey(keyOfTest(t)), ratelimit.WithTimeout(time.Minute), ratelimit.WithResponse(ratelimit.Response{FailClosed: 503}))
					if err != nil {
						t.Fatal(err)
					}
					send := func() ratelimit.Outcome {
						return g.Check(ratelimit.HTTPRequest(httptest.NewRequest(http.MethodGet, "/", nil)))
					}
					var o ratelimit.Outcome
					for n := 0; ; n++ {
						if o = send(); !o.Proceed {
							break
						}
						if n == 10 {
							t.Fatal("never denied")
						}
					}
					if o.Status != http.StatusTooManyRequests {
						t.Fatalf("got %+v, want a denial", o)
					}
					var retry int
					o.Headers(func(name, value string) {
						if name == "Retry-After" {
							retry, _ = strconv.Atoi(value)
						}
					})
					if retry < 1 || time.Duration(retry)*time.Second < o.Decision.RetryAfter || time.Duration(retry-1)*time.Second >= o.Decision.RetryAfter {
						t.Fatalf("got Retry-After %d for a wait of %v, want the wait in whole seconds, rounded up", retry, o.Decision.RetryAfter)
					}
					clock.Advance(time.Duration(retry-1) * time.Second)
					if o := send(); o.Proceed {
						t.Errorf("%d s after Retry-After %d: admitted, want 429", retry-1, retry)
					}
					clock.Advance(time.Second)
					if o := send(); !o.Proceed {
						t.Errorf("%d s after Retry-After %d: got status %d, want admitted", retry, retry, o.Status)
					}
				})
			}
		}
	})
}

// TestGuardRedisDown: Redis refusing connections is a store failure (of kind unavailable), not
// a timeout: the request fails open, or closed.
func TestGuardRedisDown(t *testing.T) {
	store := ratelimit.NewRedisStore(deadRedis(t), ratelimit.WithBreaker(0, 0)) // each check meets Redis down
	l := mustNew(t, store, ratelimit.Policy{Limit: 1, Window: time.Minute})
	for _, c := range []struct {
		name   string
		opts   []ratelimit.Option
		status int // 0: proceed
	}{
		{"fail open", nil, 0},
		{"fail closed", []ratelimit.Option{ratelimit.WithResponse(ratelimit.Response{FailClosed: 503})}, 503},
	} {
		t.Run(c.name, func(t *testing.T) {
			var reported []error
			g, err := ratelimit.NewGuard(l, append(c.opts, ratelimit.WithTimeout(time.Minute),
				ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = append(reported, err) }))...)
			if err != nil {
				t.Fatal(err)
			}
			o := g.Check(ratelimit.HTTPRequest(httptest.NewRequest(http.MethodGet, "/", nil)))
			if o.Proceed != (c.status == 0) || o.Status != c.status || o.Decision.Limit != 0 {
				t.Errorf("got %+v, want status %d", o, c.status)
			}
			const cause = "ratelimit: store: unavailable: redis check: dial tcp"
			if len(reported) != 1 || reported[0] != o.Err || observe.ErrorKind(o.Err) != "unavailable" ||
				observe.ErrorKind(o.Err) == "timeout" || !strings.HasPrefix(o.Err.Error(), cause) {
				t.Errorf("reported %v, outcome's error %v; want the one error, unavailable, starting %q", reported, o.Err, cause)
			}
		})
	}
}

// TestGuardStoreTimeout: a Redis server that does not answer costs the request the guard's
// timeout, not the client's own read timeout (an hour here), with or without go-redis's
// ContextTimeoutEnabled.
func TestGuardStoreTimeout(t *testing.T) {
	for _, contextTimeout := range []bool{false, true} {
		t.Run("ContextTimeoutEnabled="+strconv.FormatBool(contextTimeout), func(t *testing.T) {
			l := mustNew(t, ratelimit.NewRedisStore(silentRedis(t, contextTimeout)), ratelimit.Policy{Limit: 1, Window: time.Minute})
			for _, fail := range []struct {
				opts   []ratelimit.Option
				status int
			}{{nil, http.StatusOK}, {[]ratelimit.Option{ratelimit.WithResponse(ratelimit.Response{FailClosed: 503})}, http.StatusServiceUnavailable}} {
				var reported []error
				h := ratelimit.Middleware(l, append(fail.opts, ratelimit.WithTimeout(20*time.Millisecond),
					ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = append(reported, err) }))...)(okHandler)
				w := httptest.NewRecorder()
				done := make(chan struct{})
				go func() {
					defer close(done)
					h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
				}()
				select {
				case <-done:
				case <-time.After(time.Minute): // a wait on the client's hour
					t.Fatal("the request did not return within a minute; the guard's timeout is 20ms")
				}
				if w.Code != fail.status {
					t.Errorf("got status %d, want %d", w.Code, fail.status)
				}
				// The cause is the context's deadline, or, when go-redis keeps it itself, the
				// connection's read deadline.
				if len(reported) != 1 || observe.ErrorKind(reported[0]) != "timeout" ||
					!errors.Is(reported[0], context.DeadlineExceeded) && !(contextTimeout && errors.Is(reported[0], os.ErrDeadlineExceeded)) ||
					!strings.Contains(reported[0].Error(), "(the guard's timeout is 20ms)") {
					t.Errorf("reported %v, want one timeout wrapping the deadline and naming the guard's timeout", reported)
				}
			}
		})
	}
}

// deadRedis returns a client of an address where nothing listens.
func deadRedis(t *testing.T) *redis.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

// silentRedis returns a client of a server that accepts connections and never answers; the
// client's own read timeout is an hour.
func silentRedis(t *testing.T, contextTimeout bool) *redis.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, ReadTimeout: time.Hour, ContextTimeoutEnabled: contextTimeout})
	t.Cleanup(func() {
		c.Close()
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return c
}
