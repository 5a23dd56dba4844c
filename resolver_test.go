package ratelimit_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// plans is the application's data of TestResolver: the policies of each API key, and how many
// times each key was asked for.
type plans struct {
	mu    sync.Mutex
	limit map[string]int64 // by key; absent: the limiter's own policies
	fail  map[string]error
	asked map[string]int
}

func (p *plans) resolve(_ ratelimit.Request, key string) ([]ratelimit.Policy, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked[key]++
	if err := p.fail[key]; err != nil {
		return nil, err
	}
	if n, ok := p.limit[key]; ok {
		return []ratelimit.Policy{fixed(n, time.Minute, "plan")}, nil
	}
	return nil, nil
}

func (p *plans) times(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked[key]
}

// resolverGuard returns a guard keyed by X-API-Key whose limiter allows 1 per minute, with
// the resolver r, on a memory store over clock, and the errors it reports.
func resolverGuard(t *testing.T, clock *fakeClock, r ratelimit.Resolver) (*ratelimit.Guard, *[]error) {
	t.Helper()
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), fixed(1, time.Minute, "default"))
	var mu sync.Mutex
	var errs []error
	g, err := ratelimit.NewGuard(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.WithResolver(r),
		ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	return g, &errs
}

func apiRequest(apiKey string) ratelimit.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("X-API-Key", apiKey)
	return ratelimit.HTTPRequest(r)
}

// TestResolver: each key gets the policies Resolve returns for it, asked once per TTL; a key
// Resolve knows nothing of, or whose resolution fails or is not valid, gets the limiter's own
// policies, and a failure is reported and asked again after a second.
func TestResolver(t *testing.T) {
	clock := newFakeClock()
	p := &plans{
		limit: map[string]int64{"hdr:x-api-key:gold": 5, "hdr:x-api-key:bad": 0},
		fail:  map[string]error{"hdr:x-api-key:down": errors.New("database down")},
		asked: map[string]int{},
	}
	g, errs := resolverGuard(t, clock, ratelimit.Resolver{Resolve: p.resolve, TTL: 10 * time.Second})
	limitOf := func(apiKey string) int64 {
		t.Helper()
		o := g.Check(apiRequest(apiKey))
		return o.Decision.Limit
	}
	for i := range 3 {
		if n := limitOf("gold"); n != 5 {
			t.Fatalf("gold, request %d: limit %d, want 5", i, n)
		}
	}
	if n := p.times("hdr:x-api-key:gold"); n != 1 {
		t.Errorf("gold was resolved %d times in its TTL, want once", n)
	}
	clock.Advance(10 * time.Second)
	limitOf("gold")
	if n := p.times("hdr:x-api-key:gold"); n != 2 {
		t.Errorf("after the TTL, gold was resolved %d times, want twice", n)
	}

	if n := limitOf("lead"); n != 1 {
		t.Errorf("a key Resolve does not know: limit %d, want the limiter's 1", n)
	}
	limitOf("lead")
	if n := p.times("hdr:x-api-key:lead"); n != 1 {
		t.Errorf("a key without policies of its own was resolved %d times, want once: the answer is kept too", n)
	}

	for _, c := range []struct{ key, want string }{
		{"down", "ratelimit: resolving the policies of the client: database down"},
		{"bad", `resolving the policies of the client: invalid policy "plan": Limit is 0`},
	} {
		*errs = nil
		if n := limitOf(c.key); n != 1 {
			t.Errorf("%s: limit %d, want the limiter's 1", c.key, n)
		}
		limitOf(c.key)
		if len(*errs) != 1 || !strings.Contains((*errs)[0].Error(), c.want) {
			t.Errorf("%s: reported %v, want one error containing %q", c.key, *errs, c.want)
		}
		if n := p.times("hdr:x-api-key:" + c.key); n != 1 {
			t.Errorf("%s: resolved %d times within a second of its failure, want once", c.key, n)
		}
	}
	clock.Advance(time.Second)
	limitOf("down")
	if n := p.times("hdr:x-api-key:down"); n != 2 {
		t.Errorf("a second after its failure, down was resolved %d times, want twice", n)
	}
}

// TestResolverBounded: the cache holds at most Size keys, the least recently used going
// first, and a long key takes no more room than a short one.
func TestResolverBounded(t *testing.T) {
	p := &plans{limit: map[string]int64{}, asked: map[string]int{}}
	g, _ := resolverGuard(t, newFakeClock(), ratelimit.Resolver{Resolve: p.resolve, Size: 2})
	long := strings.Repeat("k", 200) // kept as its digest
	for _, k := range []string{"a", "b", "a", "c", "a", "b", long, long} {
		g.Check(apiRequest(k))
	}
	// a, b: asked; a: kept; c evicts b (a was used since); a: kept; b evicts c; long evicts a;
	// long: kept.
	for k, want := range map[string]int{"a": 1, "b": 2, "c": 1, long: 1} {
		if n := p.times("hdr:x-api-key:" + k); n != want {
			t.Errorf("%.10s: resolved %d times, want %d", k, n, want)
		}
	}
}

// TestResolverOnceAtATime: requests of a key arriving while it is resolved wait for that
// resolution rather than ask again.
func TestResolverOnceAtATime(t *testing.T) {
	var asked atomic.Int32
	release := make(chan struct{})
	resolve := func(ratelimit.Request, string) ([]ratelimit.Policy, error) {
		asked.Add(1)
		<-release
		return []ratelimit.Policy{fixed(100, time.Minute, "plan")}, nil
	}
	g, _ := resolverGuard(t, newFakeClock(), ratelimit.Resolver{Resolve: resolve})
	var wg sync.WaitGroup
	limits := make([]int64, 16)
	for i := range limits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			limits[i] = g.Check(apiRequest("same")).Decision.Limit
		}()
	}
	for asked.Load() == 0 {
		time.Sleep(time.Millisecond) // until the first request resolves; no deadline
	}
	close(release)
	wg.Wait()
	if n := asked.Load(); n != 1 {
		t.Errorf("Resolve ran %d times for one key, want once", n)
	}
	for i, n := range limits {
		if n != 100 {
			t.Errorf("request %d: limit %d, want the resolved 100", i, n)
		}
	}
}

// TestResolverPanics: a Resolve that panics panics the request (the server recovers it, as
// for a handler), and leaves no other request waiting: the key gets the limiter's policies
// until it is asked again.
func TestResolverPanics(t *testing.T) {
	calls := 0
	resolve := func(ratelimit.Request, string) ([]ratelimit.Policy, error) {
		calls++
		if calls == 1 {
			panic("boom")
		}
		return []ratelimit.Policy{fixed(7, time.Minute, "plan")}, nil
	}
	clock := newFakeClock()
	g, _ := resolverGuard(t, clock, ratelimit.Resolver{Resolve: resolve})
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want Resolve's panic", r)
			}
		}()
		g.Check(apiRequest("k"))
	}()
	if n := g.Check(apiRequest("k")).Decision.Limit; n != 1 {
		t.Errorf("right after the panic: limit %d, want the limiter's 1", n)
	}
	clock.Advance(time.Second)
	if n := g.Check(apiRequest("k")).Decision.Limit; n != 7 {
		t.Errorf("a second later: limit %d, want the resolved 7", n)
	}
}

// TestResolverCountIf: CountIf refunds a request to the policies that charged it — the
// resolved ones — and a resolved shaping policy, which CountIf cannot combine with, is a
// reported error.
func TestResolverCountIf(t *testing.T) {
	clock := newFakeClock()
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), fixed(1, time.Minute, "default"))
	resolve := func(_ ratelimit.Request, key string) ([]ratelimit.Policy, error) {
		if key == "hdr:x-api-key:shaped" {
			return []ratelimit.Policy{{Name: "queue", Limit: 5, Window: time.Second, Algorithm: algorithms.LeakyBucket{Shaping: true}}}, nil
		}
		return []ratelimit.Policy{fixed(2, time.Minute, "plan")}, nil
	}
	var reported []error
	g, err := ratelimit.NewGuard(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
		ratelimit.WithResolver(ratelimit.Resolver{Resolve: resolve}),
		ratelimit.CountIf(func(status int) bool { return status >= 400 }),
		ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = append(reported, err) }))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		o := g.Check(apiRequest("k"))
		if !o.Proceed || o.Decision.Limit != 2 {
			t.Fatalf("request %d: got proceed %v, limit %d; want every successful request refunded", i, o.Proceed, o.Decision.Limit)
		}
		g.Done(&o, http.StatusOK)
	}
	if o := g.Check(apiRequest("shaped")); o.Decision.Limit != 1 || len(reported) != 1 || !strings.Contains(reported[0].Error(), "CountIf cannot be combined") {
		t.Errorf("a resolved shaping policy: limit %d, reported %v; want the limiter's policy and the error", o.Decision.Limit, reported)
	}
}

func TestTiersAndResolverOptionErrors(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 10, Window: time.Minute})
	tier := func(ratelimit.Request) string { return "" }
	resolve := func(ratelimit.Request, string) ([]ratelimit.Policy, error) { return nil, nil }
	shaping := ratelimit.Policy{Name: "queue", Limit: 10, Window: time.Second, Algorithm: algorithms.LeakyBucket{Shaping: true}}
	for _, c := range []struct {
		opts []ratelimit.Option
		want string
	}{
		{[]ratelimit.Option{ratelimit.WithResolver(ratelimit.Resolver{Tier: nil, Tiers: map[string][]ratelimit.Policy{"a": {{Limit: 1, Window: time.Second}}}})}, "WithResolver: the Resolver has Tiers but no Tier function to name the tier of a request"},
		{[]ratelimit.Option{ratelimit.WithResolver(ratelimit.Resolver{Tier: tier, Tiers: nil})}, "WithResolver: the Resolver has a Tier function but no Tiers; give the policies of at least one tier"},
		{[]ratelimit.Option{ratelimit.WithResolver(ratelimit.Resolver{Tier: tier, Tiers: map[string][]ratelimit.Policy{"pro": {{Limit: 0, Window: time.Second}}}})},
			`WithResolver: tier "pro": ratelimit: invalid policy "gcra-0-per-1s": Limit is 0`},
		{[]ratelimit.Option{ratelimit.WithResolver(ratelimit.Resolver{Tier: tier, Tiers: map[string][]ratelimit.Policy{"pro": nil}})}, `WithResolver: tier "pro": ratelimit: New needs at least one policy`},
		{[]ratelimit.Option{ratelimit.WithResolver(ratelimit.Resolver{Tier: tier, Tiers: map[string][]ratelimit.Policy{"q": {shaping}}}), ratelimit.CountIf(func(int) bool { return true })},
			`WithResolver: tier "q": CountIf cannot be combined with the shaping policy "queue"`},
		{[]ratelimit.Option{ratelimit.WithResolver(ratelimit.Resolver{})}, "WithResolver: the Resolver has no Resolve function"},
		{[]ratelimit.Option{ratelimit.WithResolver(ratelimit.Resolver{Resolve: resolve, TTL: -1})}, "WithResolver: the Resolver's TTL is -1ns"},
		{[]ratelimit.Option{ratelimit.WithResolver(ratelimit.Resolver{Resolve: resolve, Size: -1})}, "WithResolver: the Resolver's Size is -1"},
		{[]ratelimit.Option{ratelimit.WithResolver(ratelimit.Resolver{Resolve: resolve, Tier: tier, Tiers: map[string][]ratelimit.Policy{"a": {{Limit: 1, Window: time.Second}}}})},
			"WithResolver: the Resolver has both Tiers and Resolve; give one"},
	} {
		_, err := ratelimit.NewGuard(l, c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
}

// TestTierChangeKeepsCount: tiers whose policies share a name, algorithm and window share
// the count, so a client that moves to a larger plan keeps what it used, and one that moves
// to a smaller plan is not forgiven.
func TestTierChangeKeepsCount(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		l := mustNew(t, store, fixed(1, time.Minute, "plan"))
		g, err := ratelimit.NewGuard(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
			ratelimit.WithResolver(ratelimit.Resolver{Tier: func(r ratelimit.Request) string { return r.Header("X-Plan") }, Tiers: map[string][]ratelimit.Policy{
				"free": {fixed(2, time.Minute, "plan")},
				"pro":  {fixed(5, time.Minute, "plan")},
			}}))
		if err != nil {
			t.Fatal(err)
		}
		key := keyOf(t)
		check := func(plan string) (bool, int64) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("X-API-Key", key)
			r.Header.Set("X-Plan", plan)
			o := g.Check(ratelimit.HTTPRequest(r))
			return o.Proceed, o.Decision.Remaining
		}
		for i, c := range []struct {
			plan      string
			proceed   bool
			remaining int64
		}{
			{"free", true, 1}, {"free", true, 0}, {"free", false, 0}, // 2 of 2
			{"pro", true, 2}, {"pro", true, 1}, {"pro", true, 0}, {"pro", false, 0}, // 5 of 5: the 2 used count
			{"free", false, 0}, // 5 used of 2: not forgiven
		} {
			if proceed, remaining := check(c.plan); proceed != c.proceed || remaining != c.remaining {
				t.Errorf("request %d (%s): proceed %v, remaining %d; want %v, %d", i, c.plan, proceed, remaining, c.proceed, c.remaining)
			}
		}
	})
}

// Keys whose resolved lists differ in any field of a policy do not share a limiter: here only
// in NoDenialCache or Lease, which change what the store does, not the limits (issue: the
// cache shared limiters by name, algorithm, limit, window, burst and shadow alone, so a
// tenant that opted out of the denial cache, resolved after one that had not, was denied from
// the cache, and a tenant with a lease got none).
func TestResolverKeepsEveryPolicyField(t *testing.T) {
	f := newFaultyRedis(t) // a denial cache, as by default
	l := mustNew(t, f.store, fixed(100, time.Minute, "default"))
	resolve := func(_ ratelimit.Request, key string) ([]ratelimit.Policy, error) {
		p := fixed(1, time.Hour, "api")
		switch key {
		case "hdr:x-api-key:asks":
			p.NoDenialCache = true
		case "hdr:x-api-key:leases":
			p.Lease = 10 * time.Millisecond
		}
		return []ratelimit.Policy{p}, nil
	}
	g, err := ratelimit.NewGuard(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.WithResolver(ratelimit.Resolver{Resolve: resolve}))
	if err != nil {
		t.Fatal(err)
	}
	// "cached" is resolved first: its limiter is the one the others must not get.
	for _, tenant := range []string{"cached", "asks"} {
		if d := g.Check(apiRequest(tenant)).Decision; !d.Allowed || d.Source != observe.SourceStore {
			t.Fatalf("%s's first request: %+v; want admitted by Redis", tenant, d)
		}
		want := observe.SourceStore // NoDenialCache: Redis denies
		if tenant == "cached" {
			want = observe.SourceDenialCache // foretold by the admission that spent the quota
		}
		if d := g.Check(apiRequest(tenant)).Decision; d.Allowed || d.Source != want {
			t.Fatalf("%s's second request: %+v; want denied by %v", tenant, d, want)
		}
	}
	for i := range 3 {
		if d := g.Check(apiRequest("cached")).Decision; d.Allowed || d.Source != observe.SourceDenialCache {
			t.Errorf("cached, denied request %d: allowed %v by %v; want denied by the denial cache", i+1, d.Allowed, d.Source)
		}
		if d := g.Check(apiRequest("asks")).Decision; d.Allowed || d.Source != observe.SourceStore || !d.Policy.NoDenialCache {
			t.Errorf("asks (NoDenialCache), denied request %d: allowed %v by %v, NoDenialCache %v; want denied by Redis, every time",
				i+1, d.Allowed, d.Source, d.Policy.NoDenialCache)
		}
	}
	if d := g.Check(apiRequest("leases")).Decision; !d.Allowed || d.Policy.Lease != 10*time.Millisecond {
		t.Errorf("leases: allowed %v, its policy's Lease %v; want admitted under its own policy, Lease 10ms", d.Allowed, d.Policy.Lease)
	}
}

// resolverFailures counts what an Observer is told of a failing Resolver: key fallbacks by
// reason, and store failures, of which there must be none.
type resolverFailures struct {
	fallbackCounter
	storeFailed atomic.Int32
}

func (r *resolverFailures) StoreFailed(error) { r.storeFailed.Add(1) }

// observer returns the hooks that count into r.
func (r *resolverFailures) observer() *ratelimit.Observer {
	o := r.fallbackCounter.observer()
	o.StoreFailed = r.StoreFailed
	return o
}

// A Resolver that fails leaves the request to the limiter's own policies, which decide it,
// on a fail-open guard and a fail-closed one alike: the log says so, not that the store failed
// and the request went through unlimited or was refused (issue: it said so), and each request
// the failure left on the limiter's policies is counted (resolver_failed), none as a store
// failure.
func TestResolverFailureReported(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ratelimit.Option
	}{
		{"fail open", nil},
		{"fail closed", []ratelimit.Option{ratelimit.WithResponse(ratelimit.Response{FailClosed: http.StatusServiceUnavailable})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged syncBuffer
			obs := &resolverFailures{}
			store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()), ratelimit.WithObserver(obs.observer()),
				ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
			l := mustNew(t, store, fixed(1, time.Minute, "default"))
			resolve := func(ratelimit.Request, string) ([]ratelimit.Policy, error) { return nil, errors.New("database down") }
			h := ratelimit.Middleware(l, append(tc.opts, ratelimit.WithResolver(ratelimit.Resolver{Resolve: resolve}))...)(
				http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			var codes []int
			for range 3 {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
				codes = append(codes, w.Code)
			}
			if fmt.Sprint(codes) != "[200 429 429]" {
				t.Errorf("three requests of one client while the Resolver fails: %v; want the limiter's 1 a minute to decide them", codes)
			}
			if n := obs.n["resolver_failed"]; n != 3 || len(obs.n) != 1 || obs.storeFailed.Load() != 0 {
				t.Errorf("counted: fallbacks %v, store failures %d; want 3 resolver_failed (the first asked, the others on the failure kept a second), no store failure",
					obs.n, obs.storeFailed.Load())
			}
			log := logged.String()
			if strings.Count(log, "\n") != 1 || !strings.Contains(log, `msg="ratelimit: the Resolver failed; the limiter's own policies decide the request`) ||
				!strings.Contains(log, "database down") || strings.Contains(log, "kind=") ||
				strings.Contains(log, "store failed") || strings.Contains(log, "unlimited") || strings.Contains(log, "refused") {
				t.Errorf("logged:\n%s\nwant one line: the Resolver failed, the limiter's own policies decide, with the error and no kind", log)
			}
		})
	}
}

// The requests that waited for a resolution that failed are each counted too.
func TestResolverFailureCountsWaiters(t *testing.T) {
	var asked atomic.Int32
	release := make(chan struct{})
	resolve := func(ratelimit.Request, string) ([]ratelimit.Policy, error) {
		asked.Add(1)
		<-release
		return nil, errors.New("database down")
	}
	obs := &resolverFailures{}
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()), ratelimit.WithObserver(obs.observer())), fixed(100, time.Minute, "default"))
	g, err := ratelimit.NewGuard(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.WithResolver(ratelimit.Resolver{Resolve: resolve}),
		ratelimit.WithErrorHandler(func(ratelimit.Request, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.Check(apiRequest("same"))
		}()
	}
	for asked.Load() == 0 {
		time.Sleep(time.Millisecond) // until the first request resolves; no deadline
	}
	close(release)
	wg.Wait()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if n := obs.n["resolver_failed"]; n != 16 || asked.Load() != 1 {
		t.Errorf("16 requests of a key whose one resolution failed: %d counted, %d resolutions; want 16, 1", n, asked.Load())
	}
}
