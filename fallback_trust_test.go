package ratelimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// What the local fallback decides while Redis is down is what the user configured, scaled to
// the instance's share, and nothing else: these tests each hold a way it was not (each found
// by a review, each failing before its fix).

// downStore is a Redis store whose Redis refuses every connection (nothing listens on port 1),
// with a fallback at share 1 and opts.
func downStore(t *testing.T, opts ...ratelimit.RedisOption) ratelimit.Store {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return ratelimit.NewRedisStore(rdb, append([]ratelimit.RedisOption{ratelimit.WithFallback(1), ratelimit.WithDenialCache(0)}, opts...)...)
}

// A shadow policy stays a shadow on the fallback: it decides nothing there either. (The
// fallback enforced it, and once it was spent charged nothing, not even the enforced policy:
// 100 of 100 admitted under 10 per hour.)
func TestFallbackKeepsShadow(t *testing.T) {
	l := mustNew(t, downStore(t),
		ratelimit.Policy{Name: "enforced", Limit: 10, Window: time.Hour},
		ratelimit.Policy{Name: "trial", Limit: 2, Window: time.Hour, Shadow: true})
	admitted := 0
	for range 100 {
		d := allow(t, l, "k", 1)
		if d.Source != observe.SourceFallback {
			t.Fatalf("decided by the %v; want the fallback", d.Source)
		}
		if d.Allowed {
			admitted++
		}
	}
	if admitted != 10 {
		t.Errorf("10 per hour, and a shadow 2 per hour, on the fallback at share 1: %d of 100 admitted; want 10", admitted)
	}
}

// A limit whose exact share the fallback cannot decide (10,000,000 a day is exact, a third of
// it, 3,333,333 a day, is not) is decided on the largest limit below that it can: the
// fallback decides in an outage (every check failed, and guards failed open), and the
// limiter is made as any other (New had refused it, and a Resolver's plan with it fell back
// to the default policies with Redis up).
func TestFallbackScalesEveryLimit(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	var logged syncBuffer
	store := ratelimit.NewRedisStore(rdb, ratelimit.WithFallback(1.0/3), ratelimit.WithDenialCache(0),
		ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	l := mustNew(t, store, ratelimit.Policy{Name: "daily", Limit: 10_000_000, Window: 24 * time.Hour})
	d := allow(t, l, "k", 1)
	if !d.Allowed || d.Source != observe.SourceFallback {
		t.Fatalf("Redis down, a fallback at a third of 10,000,000 a day: allowed %v by the %v; want admitted by the fallback", d.Allowed, d.Source)
	}
	// The share decided: 3,333,330 a day (the largest exact limit at or below a third),
	// whatever the headers name. Its burst is spent after exactly that many.
	if got := d.Results()[0].Remaining; got < 3_332_000 || got > 3_333_332 {
		t.Errorf("remaining after one: %d; want about a third of the limit", got)
	}
	allow(t, l, "k", 1) // the scaled list is kept: said once
	if n := strings.Count(logged.String(), "decides a policy's share on a lower limit"); n != 1 || !strings.Contains(logged.String(), "limit=3333330") {
		t.Errorf("the lowered share logged %d times; want once, naming 3333330:\n%s", n, logged.String())
	}
}

// A Resolver's plan that the fallback can decide only approximately is enforced as it is
// while Redis answers: its tenant keeps its plan (New had refused it at every resolution,
// and the tenant got the default 5 a minute: 15 of 20 refused; found by a review).
func TestResolverPlanThroughAFallback(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithFallback(1.0/3))
	l := mustNew(t, store, ratelimit.Policy{Name: "default", Limit: 5, Window: time.Minute})
	h := ratelimit.Middleware(l, ratelimit.WithResolver(ratelimit.Resolver{Resolve: func(ratelimit.Request, string) ([]ratelimit.Policy, error) {
		return []ratelimit.Policy{{Name: "enterprise", Limit: 10_000_000, Window: 24 * time.Hour}}, nil
	}}))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	if codes := statuses(h, "GET", 20); codes[http.StatusOK] != 20 {
		t.Errorf("an enterprise tenant (10,000,000 a day), Redis up: %v; want 20 × 200", codes)
	}
}

// A lease of quota is never taken from the fallback: a fail-closed route refuses while Redis
// is down (the lease layer labelled the fallback's grant as the store's, and the route let
// requests through), and a fail-open one is held to the fallback's limit exactly, the units a
// lease would have taken beyond a request given back.
func TestLeaseNotTakenFromTheFallback(t *testing.T) {
	policy := ratelimit.Policy{Name: "tenant", Limit: 10, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Minute}
	l := mustNew(t, downStore(t), policy)
	h := ratelimit.Middleware(l, ratelimit.WithResponse(ratelimit.Response{FailClosed: http.StatusServiceUnavailable}))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	if codes := statuses(h, "GET", 20); codes[http.StatusServiceUnavailable] != 20 {
		t.Errorf("Redis down, Response{FailClosed: 503}: responses %v; want 20 × 503", codes)
	}

	open := mustNew(t, downStore(t), policy)
	admitted := 0
	for i := range 15 {
		d := allow(t, open, "hot", 1)
		if d.Source != observe.SourceFallback {
			t.Fatalf("request %d decided by the %v; want the fallback", i+1, d.Source)
		}
		if d.Allowed {
			admitted++
		}
	}
	if admitted != 10 {
		t.Errorf("a hot identity on the fallback, 10 per hour: %d of 15 admitted; want 10", admitted)
	}
}

// CountIf refunds what the fallback admitted, on the fallback: during an outage, successful
// logins do not count against a limit of failed ones (they did: 7 of 10 refused).
func TestRefundOfAFallbackDecision(t *testing.T) {
	l := mustNew(t, downStore(t), ratelimit.Policy{Name: "failed-logins", Limit: 3, Window: time.Hour})
	h := ratelimit.Middleware(l, ratelimit.CountIf(func(status int) bool { return status == http.StatusUnauthorized }))(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})) // every login succeeds
	if codes := statuses(h, "POST", 10); codes[http.StatusOK] != 10 {
		t.Errorf("Redis down, CountIf(401), 10 successful logins under 3 failed ones an hour: %v; want 10 × 200", codes)
	}
}

// CountIf refunds what a lease of quota admitted: the units go back to the lease, and with
// its unused units to Redis when it ends (a hot identity's requests used up the quota though
// none counted: 986 of 1,000).
func TestRefundOfALeasedDecision(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	rec := newRecorder()
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithObserver(rec.observer())),
		ratelimit.Policy{Name: "tenant", Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: 50 * time.Millisecond})
	h := ratelimit.Middleware(l, ratelimit.CountIf(func(status int) bool { return status >= 400 }))(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})) // every response is 200: none counts
	for range 2000 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		if w.Code != http.StatusOK {
			t.Fatalf("answered %d; want 200 (nothing counts)", w.Code)
		}
	}
	if sources, _, _ := rec.snapshot(); sources[observe.SourceLease] == 0 {
		t.Fatalf("no request was served from a lease (%v): the test shows nothing", sources)
	}
	// The last lease gives its units back when it ends, 50 ms on: until Redis has them all.
	waitFor(t, "every unit back in Redis", func() bool {
		d, err := l.AllowN(context.Background(), "ip:192.0.2.1", 0) // what is left now
		return err == nil && d.Remaining == 1000
	})
}

// A request that waits for an in-flight slot, and is then admitted by the fallback because
// Redis went down meanwhile, is refused by a fail-closed route, as any fallback decision is
// (it was let through), and the fallback's slot is given back.
func TestSlotWaitFailsClosed(t *testing.T) {
	proxy := faultproxy.Start(t, redistest.Addr(t))
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	waiting := &queueSeen{recorder: newRecorder(), entered: make(chan struct{}, 1)}
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithFallback(1), ratelimit.WithObserver(waiting.observer()))
	l := mustNew(t, store, ratelimit.Policy{Name: "running", Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	if held := allow(t, l, "ip:192.0.2.1", 1); !held.Allowed {
		t.Fatal("the first request was refused its slot")
	}
	h := ratelimit.Middleware(l, ratelimit.WaitForSlot(time.Minute), ratelimit.WithResponse(ratelimit.Response{FailClosed: http.StatusServiceUnavailable}))(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	done := make(chan int)
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil)) // from 192.0.2.1
		done <- w.Code
	}()
	<-waiting.entered // it waits for the slot
	proxy.Refuse()
	if code := <-done; code != http.StatusServiceUnavailable {
		t.Errorf("Response{FailClosed: 503}, Redis down during the wait for a slot: answered %d; want 503", code)
	}
	// The fallback's slot went back: a request on a fail-open limiter over the same store
	// takes it.
	if d := allow(t, l, "ip:192.0.2.1", 1); !d.Allowed || d.Source != observe.SourceFallback {
		t.Errorf("the fallback's one slot after the refusal: allowed %v by the %v; want it free", d.Allowed, d.Source)
	}
}

// statuses serves n requests of method through h, from one client, and counts their statuses.
func statuses(h http.Handler, method string, n int) map[int]int {
	codes := map[int]int{}
	for range n {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, "/", nil))
		codes[w.Code]++
	}
	return codes
}

// queueSeen tells entered when a request starts waiting.
type queueSeen struct {
	*recorder
	entered chan struct{}
}

func (q *queueSeen) Queued(entered bool) {
	if entered {
		select {
		case q.entered <- struct{}{}:
		default:
		}
	}
}

// observer returns the recorder's hooks, with Queued telling q.entered.
func (q *queueSeen) observer() *ratelimit.Observer {
	o := q.recorder.observer()
	o.Queued = q.Queued
	return o
}

// A server that refuses FCALL (an ACL without it) turns the store to scripts for good, which
// costs Redis about twice the time per check: a warning says so, and the observer is told
// (functions). It had been silent.
func TestFunctionsRefusedReported(t *testing.T) {
	addr := redistest.Private(t)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { admin.Close() })
	if err := admin.Do(context.Background(), "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-fcall").Err(); err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: addr, Username: "app", Password: "pw", ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	obs := &operationsSeen{evictionSeen: &evictionSeen{}}
	var logged syncBuffer
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithObserver(obs.observer()), ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil)))),
		ratelimit.Policy{Limit: 3, Window: time.Hour})
	for i, want := range []bool{true, true, true, false} {
		if d := allow(t, l, "a", 1); d.Allowed != want {
			t.Fatalf("request %d: allowed %v; want %v", i+1, d.Allowed, want)
		}
	}
	if got := obs.degradations(); !slices.Equal(got, []string{"functions"}) {
		t.Errorf("reported degradations %v; want [functions]", got)
	}
	if n := strings.Count(logged.String(), "Redis refused FCALL"); n != 1 {
		t.Errorf("logged the refusal %d times; want once:\n%s", n, logged.String())
	}
	// The metrics' database attributes name the calls as they are (they said FCALL).
	if ops := obs.operations(); len(ops) != 4 || ops[3] != "EVALSHA" {
		t.Errorf("the decisions' db.operation.name: %v; want EVALSHA", ops)
	}
}

// operationsSeen keeps the store operation of every decision it is told.
type operationsSeen struct {
	*evictionSeen
	mu  sync.Mutex
	ops []string
}

func (o *operationsSeen) Decided(e ratelimit.DecisionEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e.Store != nil {
		o.ops = append(o.ops, e.Store.Operation)
	}
}

// observer returns the hooks of o's evictionSeen, with Decided keeping the operations.
func (o *operationsSeen) observer() *ratelimit.Observer {
	h := o.evictionSeen.observer()
	h.Decided = o.Decided
	return h
}

func (o *operationsSeen) operations() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.ops)
}

// The guard's log line of a fallback decision names the store's failure as it was: an OOM
// here, not "unavailable" whatever happened (the line had the kind unavailable and no cause).
func TestFallbackLogNamesTheCause(t *testing.T) {
	addr := redistest.Private(t)
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	var logged syncBuffer
	store := ratelimit.NewRedisStore(client, ratelimit.WithFallback(1), ratelimit.WithDenialCache(0),
		ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	l := mustNew(t, store, ratelimit.Policy{Limit: 10, Window: time.Hour})
	allow(t, l, "warm-up", 1) // the library loaded while there is memory
	if err := client.ConfigSet(context.Background(), "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	h := ratelimit.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	if codes := statuses(h, "GET", 1); codes[http.StatusOK] != 1 {
		t.Fatalf("Redis out of memory, a fallback at share 1: %v; want 200", codes)
	}
	line := logged.String()
	if !strings.Contains(line, "the local fallback decided the request") || !strings.Contains(line, "kind=oom") || !strings.Contains(line, "OOM") {
		t.Errorf("the guard's line of a fallback decision on an OOM:\n%s\nwant the fallback named, kind=oom and Redis's error", line)
	}
}

// A request the fallback decided before and after a wait for a slot is one failure to the
// error handler, not two (a handler that counts errors double-counted; found by a review).
func TestSlotWaitOnTheFallbackReportedOnce(t *testing.T) {
	l := mustNew(t, downStore(t), ratelimit.Policy{Name: "running", Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	allow(t, l, "ip:192.0.2.1", 1) // holds the fallback's one slot
	var errs atomic.Int32
	h := ratelimit.Middleware(l, ratelimit.WaitForSlot(20*time.Millisecond),
		ratelimit.WithErrorHandler(func(ratelimit.Request, error) { errs.Add(1) }))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if n := errs.Load(); n != 1 {
		t.Errorf("one request (answered %d): the error handler was told %d times; want once", w.Code, n)
	}
}

// WithMaxKeys bounds the Redis store's local fallback as it bounds a memory store: a long
// outage that meets many identities fills it to the bound, and its observer is told, where the
// fallback was always bound at the default 1,048,576. Given without WithFallback it would bound
// nothing, and the store refuses it, naming it.
func TestFallbackWithMaxKeys(t *testing.T) {
	var full atomic.Int64
	obs := &ratelimit.Observer{MemoryStoreFull: func(overflow bool) { full.Add(1) }}
	l := mustNew(t, downStore(t, ratelimit.WithMaxKeys(64), ratelimit.WithObserver(obs)), ratelimit.Policy{Limit: 10, Window: time.Hour})
	for i := range 4 * 64 {
		if d := allow(t, l, "id-"+strconv.Itoa(i), 1); d.Source != observe.SourceFallback {
			t.Fatalf("decided by the %v; want the fallback", d.Source)
		}
	}
	if full.Load() == 0 {
		t.Error("256 identities on a fallback bound at 64 keys: its observer was never told it was full")
	}

	defer func() {
		msg := fmt.Sprint(recover())
		if !strings.Contains(msg, "WithMaxKeys(64)") || !strings.Contains(msg, "give WithFallback too") {
			t.Errorf("NewRedisStore(WithMaxKeys(64)) without a fallback: panic %q; want one naming WithMaxKeys and WithFallback", msg)
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	ratelimit.NewRedisStore(rdb, ratelimit.WithMaxKeys(64))
}
