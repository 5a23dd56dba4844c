package ratelimit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu       sync.Mutex
	sources  map[observe.Source]int
	allowed  int
	failures []error
	breaker  []observe.BreakerState
	deaf     []bool // DenialCacheDeaf's reports, in order
}

func newRecorder() *recorder { return &recorder{sources: map[observe.Source]int{}} }

func (r *recorder) Decided(e ratelimit.DecisionEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sources[e.Source]++
	if e.Allowed {
		r.allowed++
	}
}

func (r *recorder) StoreFailed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, err)
}

func (r *recorder) BreakerChanged(_, to observe.BreakerState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.breaker = append(r.breaker, to)
}

// observer returns the hooks that record into r.
func (r *recorder) observer() *ratelimit.Observer {
	return &ratelimit.Observer{Decided: r.Decided, StoreFailed: r.StoreFailed, BreakerChanged: r.BreakerChanged,
		DenialCacheDeaf: r.DenialCacheDeaf}
}

func (r *recorder) DenialCacheDeaf(deaf bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deaf = append(r.deaf, deaf)
}

// deafReports returns DenialCacheDeaf's reports so far.
func (r *recorder) deafReports() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.deaf)
}

func (r *recorder) snapshot() (sources map[observe.Source]int, failures []error, breaker []observe.BreakerState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sources = map[observe.Source]int{}
	for k, v := range r.sources {
		sources[k] = v
	}
	return sources, append([]error(nil), r.failures...), append([]observe.BreakerState(nil), r.breaker...)
}

// faultyRedis is a Redis store behind a fault proxy, on a fake clock.
type faultyRedis struct {
	proxy *faultproxy.Proxy
	clock *fakeClock
	obs   *recorder
	store ratelimit.Store
}

func newFaultyRedis(t *testing.T, opts ...ratelimit.RedisOption) *faultyRedis {
	t.Helper()
	return newFaultyRedisTo(t, nil, opts...)
}

// newFaultyRedisTo is newFaultyRedis whose store tells o, when not nil, instead of f.obs.
func newFaultyRedisTo(t *testing.T, o *ratelimit.Observer, opts ...ratelimit.RedisOption) *faultyRedis {
	t.Helper()
	f := &faultyRedis{proxy: faultproxy.Start(t, redistest.Addr(t)), clock: newFakeClock(), obs: newRecorder()}
	if o == nil {
		o = f.obs.observer()
	}
	client := redis.NewClient(&redis.Options{Addr: f.proxy.Addr(), ContextTimeoutEnabled: true, DialTimeout: time.Second})
	t.Cleanup(func() { client.Close() })
	opts = append([]ratelimit.RedisOption{ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithClock(f.clock), ratelimit.WithObserver(o)}, opts...)
	f.store = ratelimit.NewRedisStore(client, opts...)
	// The store reads Redis's maxmemory-policy when it is made: let that read pass before the
	// test counts what reaches Redis.
	for deadline := time.Now().Add(10 * time.Second); f.proxy.Commands("config") == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the store never read the maxmemory-policy")
		}
	}
	waitHearing(t, f.store)
	return f
}

// waitHearing waits until the denial cache of s, if it has one, hears the fleet's refunds and
// resets (its subscription is made in the background), so that it caches denials.
func waitHearing(t *testing.T, s ratelimit.Store) {
	t.Helper()
	if !ratelimit.HasDenialCache(s) {
		return
	}
	for deadline := time.Now().Add(10 * time.Second); !ratelimit.DenialCacheHears(s); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the denial cache never subscribed to the refunds and resets")
		}
	}
}

// sent is how many script calls reached the proxy.
func (f *faultyRedis) sent() int {
	return f.proxy.Commands("fcall") + f.proxy.Commands("evalsha") + f.proxy.Commands("eval")
}

// short bounds a call that is to time out (Redis does not answer): the guard's deadline.
func short() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 200*time.Millisecond)
}

// generous bounds a call that is to succeed, or to fail at once, however busy the machine.
func generous() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// The breaker opens after consecutive failures, fails checks without calling Redis while
// open, lets one probe through after the cool-down, and closes when a probe succeeds.
func TestBreaker(t *testing.T) {
	f := newFaultyRedis(t, ratelimit.WithBreaker(3, time.Second))
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 100, Window: time.Hour})
	check := func(bound func() (context.Context, context.CancelFunc)) error {
		ctx, cancel := bound()
		defer cancel()
		_, err := l.Allow(ctx, "k")
		return err
	}
	if err := check(generous); err != nil {
		t.Fatal(err)
	}
	// Redis stops answering on the connection the client has: each check times out, and the
	// third opens the breaker.
	f.proxy.BlackHole()
	for i := range 3 {
		if err := check(short); observe.ErrorKind(err) != "timeout" {
			t.Fatalf("failure %d with Redis silent: %v; want a timeout", i+1, err)
		}
		if _, _, b := f.obs.snapshot(); (len(b) == 1) != (i == 2) {
			t.Fatalf("breaker changes after %d failures: %v; want [open] after 3", i+1, b)
		}
	}
	if _, _, b := f.obs.snapshot(); len(b) != 1 || b[0] != observe.BreakerOpen {
		t.Fatalf("breaker changes after 3 failures: %v; want [open]", b)
	}
	if err := f.proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	before := f.sent()
	for range 100 {
		if err := check(generous); observe.ErrorKind(err) != "breaker_open" || !errors.Is(err, ratelimit.ErrStore) {
			t.Fatalf("a check while the breaker is open: %v; want a store error of kind breaker_open", err)
		}
	}
	if err := l.Reset(ctx, "k"); observe.ErrorKind(err) != "breaker_open" {
		t.Fatalf("Reset while the breaker is open: %v; want a failure of kind breaker_open", err)
	}
	if n := f.sent() - before; n != 0 {
		t.Fatalf("the open breaker let %d calls reach Redis", n)
	}

	// After the first wait, one probe: Redis refuses it, and the breaker stays open.
	f.proxy.Refuse()
	f.clock.Advance(10 * time.Millisecond)
	if err := check(generous); observe.ErrorKind(err) != "unavailable" {
		t.Fatalf("the probe: %v; want Redis' own failure, unavailable", err)
	}
	if err := check(generous); observe.ErrorKind(err) != "breaker_open" {
		t.Fatalf("after a failed probe: %v; want a failure of kind breaker_open", err)
	}

	// Recovery without a restart: the next probe, twice the first wait later, succeeds and
	// closes the breaker.
	if err := f.proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(19 * time.Millisecond)
	if err := check(generous); observe.ErrorKind(err) != "breaker_open" {
		t.Fatalf("before the second wait ended: %v; want a failure of kind breaker_open", err)
	}
	f.clock.Advance(time.Millisecond)
	for i := range 10 {
		if err := check(generous); err != nil {
			t.Fatalf("check %d after Redis came back: %v", i+1, err)
		}
	}
	want := []observe.BreakerState{observe.BreakerOpen, observe.BreakerHalfOpen, observe.BreakerOpen,
		observe.BreakerHalfOpen, observe.BreakerClosed}
	if _, _, b := f.obs.snapshot(); !slices.Equal(b, want) {
		t.Fatalf("breaker changes: %v; want %v", b, want)
	}
	sources, failures, _ := f.obs.snapshot()
	if sources[observe.SourceStore] != 11 {
		t.Errorf("decisions reported: %v; want 11 from the store", sources)
	}
	open := 0
	for _, err := range failures {
		if observe.ErrorKind(err) == "breaker_open" {
			open++
		}
	}
	if len(failures) != 3+101+3 || open != 103 {
		t.Errorf("failures reported: %d, %d of them breaker open; want 107, 103 (the reset included)", len(failures), open)
	}
}

// A Redis that refuses connections opens the breaker at its first failure, and the breaker
// says so in the log, with the kind, and again when it closes. The store has no denial cache:
// the cache's subscription, dialling again in the background, would find the refusal first
// and open the breaker before the check does (as it should, but not what this test shows).
func TestBreakerOpensAtOnceWhenRefused(t *testing.T) {
	var buf syncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	f := newFaultyRedis(t, ratelimit.WithLogger(logger), ratelimit.WithDenialCache(0))
	// A window under an hour: a longer one has the store read the servers' persistence after
	// its first check, in a goroutine whose dial, refused, may open the breaker before the
	// first refused check does (it failed so once, on a loaded machine).
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 100, Window: 30 * time.Minute})
	if _, err := l.Allow(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	f.proxy.Refuse()
	// Refuse also closes the connections the client holds, and a check may meet one of them
	// before the client notices it closed: it fails reading (EOF, a reset), not dialing, which
	// counts as one failure of the breaker's five. The first check that dials is refused.
	for try := 1; ; try++ {
		c, cancel := generous()
		_, err := l.Allow(c, "k")
		cancel()
		if observe.ErrorKind(err) != "unavailable" {
			t.Fatalf("check %d with Redis refusing: %v; want unavailable", try, err)
		}
		if strings.Contains(err.Error(), "connection refused") {
			break
		}
		if try == 3 {
			t.Fatalf("check %d with Redis refusing: %v; want a refused connection by now", try, err)
		}
	}
	if _, err := l.Allow(ctx, "k"); observe.ErrorKind(err) != "breaker_open" {
		t.Fatalf("the second check: %v; want a failure of kind breaker_open, the breaker open after one refusal", err)
	}
	if err := f.proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(breakerCooldown)
	if _, err := l.Allow(ctx, "k"); err != nil {
		t.Fatalf("a check after Redis came back: %v", err)
	}
	var lines []string
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "circuit breaker") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 3 || !strings.Contains(lines[0], "circuit breaker opened") || !strings.Contains(lines[0], "kind=unavailable") ||
		!strings.Contains(lines[1], "circuit breaker half-open") ||
		!strings.Contains(lines[2], "circuit breaker closed") || !strings.Contains(lines[2], "decided_without_store=1") {
		t.Errorf("logged:\n%s\nwant the breaker opened (kind=unavailable), half-open, then closed (decided_without_store=1)", buf.String())
	}
}

// The line that says the breaker closed counts, in decided_without_store, every check decided
// without Redis while it was open: the failed probes too, whose checks the fail mode (or the
// fallback) decided as it did the calls not made. Traffic slower than the probes makes every
// check a probe: the line said 0 for an outage in which every request went through
// unlimited.
func TestBreakerClosedCountsFailedProbes(t *testing.T) {
	var buf syncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	f := newFaultyRedis(t, ratelimit.WithLogger(logger), ratelimit.WithDenialCache(0))
	// A window under an hour: a longer one has the store read the servers' persistence after
	// its first check, in a goroutine whose dial, refused, may open the breaker before the
	// first refused check does (it failed so once, on a loaded machine).
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 100, Window: 30 * time.Minute})
	if _, err := l.Allow(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	f.proxy.Refuse()
	c, cancel := generous()
	_, err := l.Allow(c, "k") // opens the breaker
	cancel()
	if observe.ErrorKind(err) != "unavailable" {
		t.Fatalf("the first check with Redis refusing: %v; want unavailable", err)
	}
	for i := range 3 { // each after the probe's wait: a probe, refused
		f.clock.Advance(breakerCooldown)
		c, cancel := generous()
		_, err := l.Allow(c, "k")
		cancel()
		if observe.ErrorKind(err) != "unavailable" {
			t.Fatalf("probe %d: %v; want unavailable (a probe Redis refused)", i+1, err)
		}
	}
	if err := f.proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(breakerCooldown)
	if _, err := l.Allow(ctx, "k"); err != nil {
		t.Fatalf("a check after Redis came back: %v", err)
	}
	var closed string
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "circuit breaker closed") {
			closed = line
		}
	}
	if !strings.Contains(closed, "decided_without_store=3 ") || !strings.Contains(closed, "failed_probes=3") {
		t.Errorf("closed: %q\nwant decided_without_store=3, the three checks of the failed probes (failed_probes=3)", closed)
	}
}

// While the breaker is open, only one probe at a time reaches Redis, however many requests
// arrive: here Redis never answers, and 50 concurrent checks after the cool-down send one.
func TestBreakerOneProbe(t *testing.T) {
	f := newFaultyRedis(t, ratelimit.WithBreaker(1, time.Second))
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 100, Window: time.Hour})
	if _, err := l.Peek(ctx, "warm"); err != nil {
		t.Fatal(err)
	}
	f.proxy.BlackHole()
	ctx1, cancel := short()
	l.Allow(ctx1, "k") // times out: opens the breaker
	cancel()
	f.clock.Advance(time.Second)
	// What reaches Redis: the script call, or before it the handshake of a new connection,
	// which the black hole never answers.
	reached := func() int { return f.sent() + f.proxy.Commands("hello") }
	before := reached()
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := short()
			defer cancel()
			l.Allow(ctx, "k")
		}()
	}
	wg.Wait()
	if n := reached() - before; n != 1 {
		t.Errorf("50 checks after the cool-down sent %d commands to a Redis that does not answer; want 1 probe", n)
	}
}

// A probe whose client went away learnt nothing of the store: it neither closes the breaker
// nor counts as a failed probe. Before, a probe canceled while Redis was silent closed the
// breaker ("the store answers again"), and every check after it waited out its deadline on a
// Redis that still did not answer: a client leaving cost everyone else.
//
// The client lacks ContextTimeoutEnabled, so that the store leaves the call as soon as its
// context is canceled (go-redis with it reads on until the deadline, and then reports the
// timeout, which is a failure).
func TestBreakerProbeCanceledByItsClient(t *testing.T) {
	f := &faultyRedis{proxy: faultproxy.Start(t, redistest.Addr(t)), clock: newFakeClock(), obs: newRecorder()}
	client := redis.NewClient(&redis.Options{Addr: f.proxy.Addr(), DialTimeout: time.Second})
	t.Cleanup(func() { client.Close() })
	f.store = ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithClock(f.clock),
		ratelimit.WithObserver(f.obs.observer()), ratelimit.WithBreaker(1, time.Second), ratelimit.WithDenialCache(0))
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 100, Window: time.Hour})
	if _, err := l.Peek(ctx, "warm"); err != nil {
		t.Fatal(err)
	}
	f.proxy.BlackHole()
	c, cancel := short()
	l.Allow(c, "k") // times out: opens the breaker
	cancel()
	f.clock.Advance(time.Second)

	// The probe: its client leaves while Redis is silent, before the deadline.
	c, cancel = short()
	before := f.sent() + f.proxy.Commands("hello")
	done := make(chan error, 1)
	go func() {
		_, err := l.Allow(c, "k")
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); f.sent()+f.proxy.Commands("hello") == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the probe never reached Redis")
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the probe whose client left: %v; want context.Canceled", err)
	}
	if _, _, b := f.obs.snapshot(); slices.Contains(b, observe.BreakerClosed) {
		t.Fatalf("breaker changes: %v; a canceled probe closed the breaker", b)
	}
	// Redis is still silent: the next probe goes at once (the canceled one tested nothing),
	// and the one after it finds the breaker open.
	c, cancel = short()
	_, err := l.Allow(c, "k")
	cancel()
	if observe.ErrorKind(err) != "timeout" {
		t.Fatalf("the next probe: %v; want a timeout", err)
	}
	if _, err := l.Allow(ctx, "k"); observe.ErrorKind(err) != "breaker_open" {
		t.Fatalf("a check after the probe timed out: %v; want breaker_open, the breaker still open", err)
	}
	want := []observe.BreakerState{observe.BreakerOpen, observe.BreakerHalfOpen, observe.BreakerOpen,
		observe.BreakerHalfOpen, observe.BreakerOpen}
	if _, _, b := f.obs.snapshot(); !slices.Equal(b, want) {
		t.Fatalf("breaker changes: %v; want %v", b, want)
	}
}

// A request whose own deadline (a gRPC client's grpc-timeout, an upstream's) comes before the
// guard's timeout and passes while Redis is answering is a client that went away, not a store
// that failed: it is neither reported as a failure nor counted by the breaker. Before, each
// was a timeout of the store's: a client sending requests with a deadline of a few ms opened
// the breaker for every other client (five in a row), its failures told to the observer as
// Redis timing out.
func TestClientDeadlineIsNoStoreFailure(t *testing.T) {
	f := newFaultyRedis(t, ratelimit.WithDenialCache(0))
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 1000, Window: time.Hour})
	h := ratelimit.Middleware(l, ratelimit.WithTimeout(10*time.Second))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	serve := func(ctx context.Context) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil).WithContext(ctx))
		return rec.Code
	}
	if code := serve(context.Background()); code != http.StatusOK {
		t.Fatalf("first request: %d", code)
	}
	f.proxy.Delay(100 * time.Millisecond) // Redis answers, in 100 ms
	for i := range 6 {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		serve(c)
		cancel()
		if _, failures, b := f.obs.snapshot(); len(failures) != 0 || len(b) != 0 {
			t.Fatalf("after %d requests whose own deadline passed: failures %v, breaker changes %v; want none", i+1, failures, b)
		}
	}
	if code := serve(context.Background()); code != http.StatusOK {
		t.Fatalf("a request with no deadline of its own: %d", code)
	}
	if sources, failures, _ := f.obs.snapshot(); len(failures) != 0 || sources[observe.SourceStore] == 0 {
		t.Errorf("decided by %v with failures %v; want the store, none", sources, failures)
	}
}

// With a fallback, a store outage is decided locally under each limit's share, with headers;
// a guard that fails closed still refuses.
func TestFallback(t *testing.T) {
	f := newFaultyRedis(t, ratelimit.WithFallback(0.5), ratelimit.WithBreaker(1, time.Minute))
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 10, Window: time.Hour})
	open := ratelimit.Middleware(l, ratelimit.WithTimeout(200*time.Millisecond))(okHandler)
	closed := ratelimit.Middleware(l, ratelimit.WithTimeout(200*time.Millisecond), ratelimit.WithResponse(ratelimit.Response{FailClosed: http.StatusServiceUnavailable}))(okHandler)
	serve := func(h http.Handler) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		return w
	}
	f.proxy.Refuse()
	admitted := 0
	for i := range 8 {
		w := serve(open)
		if w.Code == http.StatusOK {
			admitted++
		}
		if w.Header().Get("X-RateLimit-Remaining") == "" {
			t.Fatalf("response %d decided by the fallback has no rate-limit headers: %v", i+1, w.Header())
		}
	}
	if admitted != 5 {
		t.Errorf("Redis down, 10 per hour, share 0.5: %d of 8 admitted; want 5", admitted)
	}
	if w := serve(closed); w.Code != http.StatusServiceUnavailable {
		t.Errorf("a fail-closed route while Redis is down: %d; want 503", w.Code)
	}
	sources, _, _ := f.obs.snapshot()
	if sources[observe.SourceFallback] != 9 {
		t.Errorf("decisions reported: %v; want 9 from the fallback", sources)
	}
	// Decided locally, refunded locally: nothing is given back in Redis.
	d, err := l.Allow(ctx, "direct")
	if err != nil || d.Source != observe.SourceFallback {
		t.Fatalf("a direct Allow while Redis is down: %+v, %v; want a decision of the fallback", d, err)
	}
	if err := l.Settle(ctx, "direct", d, 0); err != nil {
		t.Errorf("refunding a decision of the fallback: %v", err)
	}
}

// The denial cache: an identity flooded while denied costs Redis nothing until its
// Retry-After ends, with exact headers; other identities are unaffected; it never admits what
// Redis would deny.
func TestDenialCache(t *testing.T) {
	f := newFaultyRedis(t, ratelimit.WithDenialCache(1000))
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 2, Window: time.Minute}) // one per 30 s
	allow(t, l, "flood", 1)
	allow(t, l, "flood", 1)
	first := allow(t, l, "flood", 1)
	if first.Allowed || first.RetryAfter != 30*time.Second {
		t.Fatalf("third request of 2/min: %+v; want denied for 30 s", first)
	}
	before := f.sent()
	for i := range 1000 {
		f.clock.Advance(10 * time.Millisecond)
		d := allow(t, l, "flood", 1)
		want := 30*time.Second - time.Duration(i+1)*10*time.Millisecond
		if d.Allowed || d.Source != observe.SourceDenialCache || d.RetryAfter != want || d.Remaining != 0 {
			t.Fatalf("flood request %d: allowed %v source %v RetryAfter %v remaining %d; want denied from the cache, RetryAfter %v", i+1, d.Allowed, d.Source, d.RetryAfter, d.Remaining, want)
		}
	}
	if n := f.sent() - before; n != 0 {
		t.Fatalf("1,000 requests of a denied identity sent %d calls to Redis; want 0", n)
	}
	if d := allow(t, l, "other", 1); !d.Allowed || d.Source != observe.SourceStore {
		t.Fatalf("another identity: %+v; want allowed by the store", d)
	}
	// At the end of the Retry-After, Redis decides again, and admits.
	f.clock.Advance(20 * time.Second)
	if d := allow(t, l, "flood", 1); !d.Allowed || d.Source != observe.SourceStore {
		t.Fatalf("after the Retry-After: %+v; want allowed by the store", d)
	}
	// A reset through this process forgets the denial at once.
	allow(t, l, "reset", 2)
	if d := allow(t, l, "reset", 1); d.Allowed {
		t.Fatal("over the limit, allowed")
	}
	if err := l.Reset(ctx, "reset"); err != nil {
		t.Fatal(err)
	}
	if d := allow(t, l, "reset", 1); !d.Allowed {
		t.Fatalf("after Reset: %+v; want allowed", d)
	}
}

// The cache answers a request of the cost it saw denied, or more; a cheaper one asks Redis.
func TestDenialCacheByCost(t *testing.T) {
	f := newFaultyRedis(t, ratelimit.WithDenialCache(1000))
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 10, Window: time.Minute})
	allow(t, l, "k", 8)
	if d := allow(t, l, "k", 5); d.Allowed {
		t.Fatal("cost 5 with 2 left: allowed")
	}
	before := f.sent()
	if d := allow(t, l, "k", 6); d.Allowed || d.Source != observe.SourceDenialCache {
		t.Fatalf("cost 6 after cost 5 was denied: %+v; want denied from the cache", d)
	}
	if d := allow(t, l, "k", 2); !d.Allowed || d.Source != observe.SourceStore {
		t.Fatalf("cost 2 with 2 left: %+v; want allowed by the store", d)
	}
	if n := f.sent() - before; n != 1 {
		t.Fatalf("%d calls to Redis; want 1 (the cost-2 request)", n)
	}
}

// The memory store reports its decisions to its observer. (The options of a store that can
// fail do not compile with the memory store: see TestOptionMisuseDoesNotCompile.)
func TestMemoryStoreObserved(t *testing.T) {
	obs := newRecorder()
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(obs.observer())), ratelimit.Policy{Limit: 1, Window: time.Hour})
	allow(t, l, "k", 1)
	allow(t, l, "k", 1)
	if s, _, _ := obs.snapshot(); s[observe.SourceStore] != 2 || obs.allowed != 1 {
		t.Errorf("memory store with an observer: %v decisions, %d allowed; want 2, 1", s, obs.allowed)
	}
}

// An invalid resilience option is refused when the store is made, naming the option; the
// breaker, on by default, is turned off with WithBreaker(0, 0).
func TestResilienceOptionsInvalid(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { client.Close() })
	for _, tc := range []struct {
		name string
		o    ratelimit.RedisOption
	}{
		{"WithBreaker(0, ", ratelimit.WithBreaker(0, time.Second)},
		{"WithBreaker(3, 0s)", ratelimit.WithBreaker(3, 0)},
		{"WithBreaker(-1, ", ratelimit.WithBreaker(-1, -time.Second)},
		{"WithFallback(0)", ratelimit.WithFallback(0)},
		{"WithFallback(1.5)", ratelimit.WithFallback(1.5)},
		{"WithFallback(NaN)", ratelimit.WithFallback(math.NaN())},
		{"WithDenialCache(-1)", ratelimit.WithDenialCache(-1)},
		{"WithCallTimeout(0s)", ratelimit.WithCallTimeout(0)},
		{"WithCallTimeout(-1s)", ratelimit.WithCallTimeout(-time.Second)},
		{"WithObserver(nil)", ratelimit.WithObserver(nil)},
	} {
		func() {
			defer func() {
				r := recover()
				if err, ok := r.(error); !ok || !strings.Contains(err.Error(), tc.name) {
					t.Errorf("NewRedisStore(%s...): panic %v; want an error naming the option", tc.name, r)
				}
			}()
			ratelimit.NewRedisStore(client, tc.o)
		}()
	}
	ratelimit.NewRedisStore(client, ratelimit.WithBreaker(0, 0))  // no breaker: valid
	ratelimit.NewRedisStore(client, ratelimit.WithDenialCache(0)) // no denial cache: valid
}

// Outages end with the goroutines back to what they were: nothing leaks per failed call.
func TestOutageLeaksNoGoroutines(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Run("black hole", func(t *testing.T) { // its cleanups close the client and the proxy
		f := newFaultyRedis(t, ratelimit.WithBreaker(5, time.Second), ratelimit.WithFallback(1))
		l := mustNew(t, f.store, ratelimit.Policy{Limit: 100, Window: time.Hour})
		h := ratelimit.Middleware(l, ratelimit.WithTimeout(50*time.Millisecond))(okHandler)
		f.proxy.BlackHole()
		var wg sync.WaitGroup
		for range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
			}()
		}
		wg.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base+5 && time.Now().Before(deadline) { // the proxy and pool wind down
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+5 {
		t.Errorf("%d goroutines after the outage, %d before", n, base)
	}
}

// One identity flooded far past its limit by 64 goroutines for 10 s (on the fake clock, 100
// steps of 100 ms, 640 requests each) costs Redis a bounded number of calls — one admission
// and one denial per Retry-After period — while the identities beside it are decided by Redis
// as usual.
func TestDenialCacheFlood(t *testing.T) {
	f := newFaultyRedis(t, ratelimit.WithDenialCache(1000))
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 10, Window: time.Second, Burst: 1}) // one per 100 ms
	const steps, perStep = 100, 640
	var admitted int
	calls, first := 0, 0
	for step := range steps {
		before := f.sent()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := 0
				for range perStep / 64 {
					d, err := l.Allow(ctx, "flood")
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						n++
					}
				}
				mu.Lock()
				admitted += n
				mu.Unlock()
			}()
		}
		wg.Wait()
		if step == 0 {
			// Before the first denial is known, every goroutine's requests go to Redis.
			first = f.sent() - before
		} else {
			calls += f.sent() - before
		}
		if d := allow(t, l, "neighbour-"+strconv.Itoa(step), 1); !d.Allowed || d.Source != observe.SourceStore {
			t.Fatalf("step %d: a neighbour of the flood: %+v; want admitted by Redis", step, d)
		}
		f.clock.Advance(100 * time.Millisecond)
	}
	if admitted != steps {
		t.Errorf("the flood got %d of %d requests admitted; want %d, one per 100 ms", admitted, steps*perStep, steps)
	}
	// Per period: the request admitted, and the one that learns the next denial.
	if calls > 2*(steps-1) {
		t.Errorf("after the first period, %d flooding requests made %d calls to Redis; want at most %d (2 per Retry-After period)", (steps-1)*perStep, calls, 2*(steps-1))
	}
	if first > 2*64 {
		t.Errorf("the first period made %d calls to Redis; want at most 2 per goroutine", first)
	}
	t.Logf("%d flooding requests over %d periods: %d admitted; calls to Redis: %d in the first period, %d in the %d others", steps*perStep, steps, admitted, first, calls, steps-1)
}

// The denial cache holds at most its bound, however many identities are denied; dropping a
// denial only sends the identity back to Redis, which denies it again.
func TestDenialCacheBounded(t *testing.T) {
	f := newFaultyRedis(t, ratelimit.WithDenialCache(64)) // 4 per shard
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 1, Window: time.Hour})
	for i := range 1000 {
		key := "id-" + strconv.Itoa(i)
		allow(t, l, key, 1)
		if allow(t, l, key, 1).Allowed {
			t.Fatalf("%s: second request of 1 per hour admitted", key)
		}
	}
	if n := ratelimit.DenialCacheLen(f.store); n > 64 {
		t.Fatalf("the denial cache holds %d denials; bound 64", n)
	}
	for i := range 1000 {
		if allow(t, l, "id-"+strconv.Itoa(i), 1).Allowed {
			t.Fatalf("id-%d admitted after its denial left the cache", i)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes: a log written from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// breakerCooldown is the longest wait of the Redis store's default breaker between probes.
const breakerCooldown = 100 * time.Millisecond
