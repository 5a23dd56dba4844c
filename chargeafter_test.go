package ratelimit_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
	"github.com/a7d3e0dd/ratelimit/internal/testing/httpspec"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// tokensLimiter is 100 tokens a minute, on the memory store and a fake clock.
func tokensLimiter(t *testing.T, obs *ratelimit.Observer) (*ratelimit.Limiter, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	opts := []ratelimit.StoreOption{ratelimit.WithClock(clock)}
	if obs != nil {
		opts = append(opts, ratelimit.WithObserver(obs))
	}
	return mustNew(t, ratelimit.NewMemoryStore(opts...), ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Minute}), clock
}

// estimate20 is the guard option of a request estimated at 20 tokens.
var estimate20 = ratelimit.WithCost(func(ratelimit.Request) int64 { return 20 })

// remaining returns what is left of the limiter's quota for key, charging nothing.
func remaining(t *testing.T, l *ratelimit.Limiter, key string) int64 {
	t.Helper()
	return allow(t, l, key, 0).Remaining
}

func getAt(h http.Handler, query string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/complete?"+query, nil)
	r.RemoteAddr = "192.0.2.1:1234"
	h.ServeHTTP(w, r)
	return w
}

// The case through the middleware: ten concurrent requests estimated at 20 against
// 100 tokens a minute, each reporting 30. Five are admitted while the others' holds are out;
// their settles charge 150, and the next request is refused with a Retry-After that says when
// the window repays the overdraft.
func TestChargeAfterBoundsConcurrentRequests(t *testing.T) {
	l, _ := tokensLimiter(t, nil)
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	h := ratelimit.Middleware(l, estimate20, ratelimit.ChargeAfter(cost.Reported))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		cost.Report(r.Context(), 30)
	}))
	var wg sync.WaitGroup
	codes := make(chan int, 10)
	for range 10 {
		wg.Add(1)
		go func() { defer wg.Done(); codes <- getAt(h, "").Code }()
	}
	denied := 0
	for denied+len(entered) < 10 { // every request is either in its handler or answered
		select {
		case c := <-codes:
			if c != http.StatusTooManyRequests {
				t.Fatalf("a request answered %d while the others ran, want 429", c)
			}
			denied++
		case <-time.After(10 * time.Millisecond): // polling entered; no deadline is asserted
		}
	}
	if admitted := len(entered); admitted != 5 || denied != 5 {
		t.Fatalf("%d admitted and %d denied at once, want 5 and 5", admitted, denied)
	}
	close(release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("an admitted request answered %d", c)
		}
	}
	w := getAt(h, "")
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("after 150 tokens of 100, a request answered %d, want 429", w.Code)
	}
	// GCRA, the default: a token comes back every 0.6 s, and the next request, estimated at
	// 20, fits when 150 + 20 - 100 = 70 came back: in 42 s.
	if got := w.Header().Get("Retry-After"); got != "42" {
		t.Errorf("Retry-After %q after an overdraft of 50, want 42", got)
	}
}

// A handler's report, its bytes, its status: each is what ChargeAfter's function charges.
func TestChargeAfterSources(t *testing.T) {
	cases := []struct {
		name   string
		charge func(cost.After) int64
		query  string // report=N, bytes=N, status=N
		want   int64  // charged
	}{
		{"reported", cost.Reported, "report=30", 30},
		{"reported below the estimate", cost.Reported, "report=5", 5},
		{"reported nothing: the estimate", cost.Reported, "", 20},
		{"reported 0", cost.Reported, "report=0", 0},
		{"reported twice", cost.Reported, "report=30&report=12", 42},
		{"a server error is not charged", cost.Reported, "report=30&status=503", 0},
		{"bytes", cost.Written, "bytes=1234&report=1", 1234},
		{"by status", func(a cost.After) int64 {
			if a.Status == http.StatusNotFound {
				return 0
			}
			return a.Estimate
		}, "status=404", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, _ := tokensLimiter(t, nil)
			h := ratelimit.Middleware(l, estimate20, ratelimit.ChargeAfter(c.charge))(http.HandlerFunc(reply))
			getAt(h, c.query)
			if got := 100 - remaining(t, l, "ip:192.0.2.1"); got != min(c.want, 100) {
				t.Errorf("charged %d, want %d", got, c.want)
			}
		})
	}
}

// reply answers as its query says: status=N, bytes=N of body, report=N (each one a report).
func reply(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for _, v := range q["report"] {
		n, _ := strconv.ParseInt(v, 10, 64)
		cost.Report(r.Context(), n)
	}
	if s := q.Get("status"); s != "" {
		code, _ := strconv.Atoi(s)
		w.WriteHeader(code)
	}
	if s := q.Get("bytes"); s != "" {
		n, _ := strconv.Atoi(s)
		_, _ = io.WriteString(w, strings.Repeat("x", n))
	}
}

// A handler that panics settles as a 500: cost.Reported charges it nothing, and its hold is
// given back at once (not only when its lifetime ends).
func TestChargeAfterPanic(t *testing.T) {
	l, _ := tokensLimiter(t, nil)
	h := ratelimit.Middleware(l, estimate20, ratelimit.ChargeAfter(cost.Reported))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cost.Report(r.Context(), 30)
		panic("the handler failed")
	}))
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the handler's panic did not reach the caller")
			}
		}()
		getAt(h, "")
	}()
	if got := remaining(t, l, "ip:192.0.2.1"); got != 100 {
		t.Errorf("%d left after a handler that panicked, want 100 (nothing charged, the hold given back)", got)
	}
}

// A stream whose client goes away is charged what was written to it.
func TestChargeAfterStreamAbandoned(t *testing.T) {
	l, _ := tokensLimiter(t, nil)
	wrote := make(chan struct{})
	h := ratelimit.Middleware(l, estimate20, ratelimit.ChargeAfter(cost.Written))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; ; i++ {
			if _, err := io.WriteString(w, "data: token\n\n"); err != nil { // 13 bytes an event
				return
			}
			http.NewResponseController(w).Flush()
			if i == 2 {
				close(wrote)
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Millisecond): // the next token; the test asserts no deadline
			}
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	reqCtx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(reqCtx, http.MethodGet, srv.URL, nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	<-wrote
	cancel() // the client goes away mid-stream
	resp.Body.Close()
	// The handler returns when its context ends; the settle follows at once. Wait for it
	// through the limiter: the hold of 20 is replaced by what was written.
	for {
		left := remaining(t, l, "ip:127.0.0.1")
		if left != 80 { // 80: still held
			if charged := 100 - left; charged < 3*13 || charged%13 != 0 {
				t.Errorf("charged %d for an abandoned stream, want the bytes written: a multiple of 13, at least 39", charged)
			}
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// A negative charge is reported, and the estimate stays charged.
func TestChargeAfterNegative(t *testing.T) {
	l, _ := tokensLimiter(t, nil)
	var reported error
	h := ratelimit.Middleware(l, estimate20,
		ratelimit.ChargeAfter(func(cost.After) int64 { return -5 }),
		ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = err }),
	)(http.HandlerFunc(reply))
	getAt(h, "")
	if !errors.Is(reported, ratelimit.ErrBadRequest) || !strings.Contains(reported.Error(), "-5") {
		t.Errorf("reported %v, want an ErrBadRequest naming -5", reported)
	}
	if got := remaining(t, l, "ip:192.0.2.1"); got != 80 {
		t.Errorf("%d left, want 80: the estimate stays charged", got)
	}
}

// Two guards in a row, requests a minute and tokens a minute (examples/llm): the outer one
// charges 1 a request, the inner one what the handler reports, and a guard of each kind in
// front of the other meters alike.
func TestChargeAfterNested(t *testing.T) {
	clock := newFakeClock()
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock))
	rpm := mustNew(t, store, ratelimit.Policy{Name: "rpm", Limit: 10, Window: time.Minute})
	tpm := mustNew(t, store, ratelimit.Policy{Name: "tpm", Limit: 1000, Window: time.Minute})
	outer := ratelimit.Middleware(rpm)
	inner := ratelimit.Middleware(tpm, ratelimit.WithCost(func(ratelimit.Request) int64 { return 100 }), ratelimit.ChargeAfter(cost.Reported))
	h := outer(inner(http.HandlerFunc(reply)))
	getAt(h, "report=250")
	if got := remaining(t, rpm, "ip:192.0.2.1"); got != 9 {
		t.Errorf("requests left %d, want 9", got)
	}
	if got := remaining(t, tpm, "ip:192.0.2.1"); got != 750 {
		t.Errorf("tokens left %d, want 750", got)
	}
}

// The options that cannot go with ChargeAfter are refused, naming why.
func TestChargeAfterMisuse(t *testing.T) {
	store := ratelimit.NewMemoryStore()
	l := mustNew(t, store, ratelimit.Policy{Limit: 10, Window: time.Minute})
	slots := mustNew(t, store, inFlight(2))
	for name, c := range map[string]struct {
		l    *ratelimit.Limiter
		opts []ratelimit.Option
		want string
	}{
		"nil":             {l, []ratelimit.Option{ratelimit.ChargeAfter(nil)}, "ChargeAfter(nil)"},
		"twice":           {l, []ratelimit.Option{ratelimit.ChargeAfter(cost.Reported), ratelimit.ChargeAfter(cost.Written)}, "ChargeAfter"},
		"with CountIf":    {l, []ratelimit.Option{ratelimit.ChargeAfter(cost.Reported), ratelimit.CountIf(func(int) bool { return true })}, "ChargeAfter and CountIf"},
		"in-flight slots": {slots, []ratelimit.Option{ratelimit.ChargeAfter(cost.Reported)}, `ChargeAfter: `},
	} {
		_, err := ratelimit.NewGuard(c.l, c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: NewGuard: %v, want an error naming %q", name, err, c.want)
		}
	}
}

// The observer is told of each hold and its settle: the figures of the metrics modules.
func TestChargeAfterObserved(t *testing.T) {
	var (
		mu     sync.Mutex
		events []observe.HoldEvent
	)
	l, _ := tokensLimiter(t, &ratelimit.Observer{Held: func(e observe.HoldEvent) { mu.Lock(); events = append(events, e); mu.Unlock() }})
	h := ratelimit.Middleware(l, estimate20, ratelimit.ChargeAfter(cost.Reported))(http.HandlerFunc(reply))
	getAt(h, "report=35")
	want := []observe.HoldEvent{{Estimate: 20}, {Settled: true, Estimate: 20, Actual: 35}}
	if len(events) != 2 || events[0] != want[0] || events[1] != want[1] {
		t.Fatalf("observed %+v, want %+v", events, want)
	}
	if e := events[1].Error(); e != 15 {
		t.Errorf("estimate error %d, want 15", e)
	}
}

// A shadow policy is held and settled like the others, and never refuses: its would-be
// denials show in X-RateLimit-Shadow.
func TestChargeAfterShadow(t *testing.T) {
	clock := newFakeClock()
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)),
		ratelimit.Policy{Name: "tokens", Limit: 1000, Window: time.Minute},
		ratelimit.Policy{Name: "strict", Limit: 40, Window: time.Minute, Shadow: true})
	h := ratelimit.Middleware(l, estimate20, ratelimit.ChargeAfter(cost.Reported),
		ratelimit.WithResponse(ratelimit.Response{Shadow: true}))(http.HandlerFunc(reply))
	// 30 charged to both; then the estimate of 20 is more than the 10 the shadow policy has
	// left, and it is charged to the enforced one only.
	for i, want := range []string{"", "strict", "strict"} {
		w := getAt(h, "report=30")
		if w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Shadow") != want {
			t.Errorf("request %d: %d, shadow %q; want 200, %q", i+1, w.Code, w.Header().Get("X-RateLimit-Shadow"), want)
		}
	}
	if got := remaining(t, l, "ip:192.0.2.1"); got != 910 { // 30 + 30 + 30 of the enforced policy
		t.Errorf("%d left of the enforced policy, want 910", got)
	}
}

// A handler that panics, charged after the response: what it served is charged, a failure
// before answering is not (httpspec.Panics, as every adapter meets it).
func TestChargeAfterPanics(t *testing.T) {
	httpspec.Panics(t, func(l *ratelimit.Limiter, opts []ratelimit.Option, handle httpspec.Handle) http.Handler {
		limited := ratelimit.Middleware(l, opts...)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(r.Context(), w) }))
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { // a recovery in front, as net/http's server is
			defer func() { recover() }()
			limited.ServeHTTP(w, r)
		})
	})
}

// A Resolver's policies that cannot hold (an in-flight limit) are not used by a guard that
// charges after the response: the request is limited by the guard's own policies, held as
// any other, and the fallback is told (KeyFellBack "resolver_failed") and reported.
func TestChargeAfterResolverThatCannotHold(t *testing.T) {
	clock := newFakeClock()
	var fellBack []string
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithObserver(&ratelimit.Observer{KeyFellBack: func(r string) { fellBack = append(fellBack, r) }}))
	l := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Minute})
	var reported error
	h := ratelimit.Middleware(l, estimate20, ratelimit.ChargeAfter(cost.Reported),
		ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = err }),
		ratelimit.WithResolver(ratelimit.Resolver{Resolve: func(ratelimit.Request, string) ([]ratelimit.Policy, error) {
			return []ratelimit.Policy{inFlight(2)}, nil
		}}))(http.HandlerFunc(reply))
	if w := getAt(h, "report=30"); w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Limit") != "100" {
		t.Fatalf("answered %d, X-RateLimit-Limit %q; want 200 under the guard's own policy of 100", w.Code, w.Header().Get("X-RateLimit-Limit"))
	}
	if got := remaining(t, l, "ip:192.0.2.1"); got != 70 {
		t.Errorf("%d left of the guard's own policy, want 70: the 30 reported", got)
	}
	if len(fellBack) != 1 || fellBack[0] != "resolver_failed" || reported == nil || !strings.Contains(reported.Error(), "ChargeAfter") {
		t.Errorf("told %v, reported %v; want resolver_failed, and an error naming ChargeAfter", fellBack, reported)
	}
}
