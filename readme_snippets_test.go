package ratelimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// The functions readme* of this file are the guide's Go blocks, as written (TestReadmeCodeAsWritten
// holds them to README line for line); the tests beside them check what the guide's prose says
// each does, through the middleware it names.

// readmeTrustProxies is the guide's trusted proxies, as written, over the limiter it names.
func readmeTrustProxies(limiter *ratelimit.Limiter) func(http.Handler) http.Handler {
	return ratelimit.Middleware(limiter, ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8", "2001:db8::/32")) // README: as written, returned
}

// What the guide says of TrustProxies: the header is read from the right and the first address
// that is not a trusted proxy is the client; a client that is not behind a trusted proxy is
// limited by its own address, whatever headers it sends; IPv6 clients are grouped by /64.
func TestReadmeTrustProxies(t *testing.T) {
	limiter := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0))),
		ratelimit.Policy{Limit: 1, Window: time.Hour})
	h := readmeTrustProxies(limiter)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func(peer, forwardedFor string) int {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = peer
		if forwardedFor != "" {
			r.Header.Set("X-Forwarded-For", forwardedFor)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for _, c := range []struct {
		what, peer, xff string
		want            int
	}{
		{"a client through a proxy", "10.0.0.1:1000", "203.0.113.7", 200},
		{"the same client, through another proxy of the list", "10.9.9.9:1000", "203.0.113.7, 10.0.0.2", 429},
		{"another client behind the same proxy", "10.0.0.1:1000", "203.0.113.8", 200},
		{"the first client named further left, behind an untrusted hop", "10.0.0.1:1000", "203.0.113.7, 198.51.100.50", 200}, // 198.51.100.50 is the client
		{"an IPv6 client through an IPv6 proxy", "[2001:db8::1]:1000", "2001:db8:aaaa:1::1", 200},
		{"another address of the same /64", "[2001:db8::1]:1000", "2001:db8:aaaa:1::2", 429},
		{"an address of another /64", "[2001:db8::1]:1000", "2001:db8:aaaa:2::1", 200},
		{"a client not behind a proxy, naming another in the header", "192.0.2.9:1000", "203.0.113.9", 200},
		{"the same client, naming yet another", "192.0.2.9:1000", "203.0.113.10", 429},
		{"the client it named, through a proxy", "10.0.0.1:1000", "203.0.113.9", 200},
	} {
		if got := send(c.peer, c.xff); got != c.want {
			t.Errorf("%s (peer %s, X-Forwarded-For %q): %d; want %d", c.what, c.peer, c.xff, got, c.want)
		}
	}
}

// readmeUserNetHTTP is the guide's net/http authentication in front of the limiter keyed by
// user, as written, over the limiter, mux and authentication function it names.
func readmeUserNetHTTP(limiter *ratelimit.Limiter, mux http.Handler, authenticate func(*http.Request) (string, bool)) http.Handler {
	// net/http: the authentication middleware wraps the limiter.
	type userKey struct{}

	auth := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if id, ok := authenticate(r); ok { // your authentication
				r = r.WithContext(context.WithValue(r.Context(), userKey{}, id))
			}
			next.ServeHTTP(w, r)
		})
	}
	handler := auth(ratelimit.Middleware(limiter, ratelimit.WithKey(ratelimit.KeyByUser(userKey{})))(mux))
	return handler // README: what the caller serves
}

// What the guide says of KeyByUser in net/http: a user is limited wherever it comes from; a
// request without a user is limited by its client IP (and counted as a key fallback,
// no_user).
func TestReadmeUserNetHTTP(t *testing.T) {
	obs := &fallbackCounter{}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0)), ratelimit.WithObserver(obs.observer()))
	limiter := mustNew(t, store, ratelimit.Policy{Limit: 2, Window: time.Hour})
	authenticate := func(r *http.Request) (string, bool) {
		return strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	h := readmeUserNetHTTP(limiter, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), authenticate)
	send := func(ip, user string) int {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = ip + ":1000"
		if user != "" {
			r.Header.Set("Authorization", "Bearer "+user)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	var got []int
	for _, c := range [][2]string{
		{"192.0.2.1", "alice"}, {"192.0.2.2", "alice"}, {"192.0.2.3", "alice"}, // one user, three addresses
		{"192.0.2.1", "bob"},                                    // another user, from alice's address
		{"192.0.2.4", ""}, {"192.0.2.4", ""}, {"192.0.2.4", ""}, // no user: its client IP
		{"192.0.2.5", ""}, // another address without a user
	} {
		got = append(got, send(c[0], c[1]))
	}
	if want := []int{200, 200, 429, 200, 200, 200, 429, 200}; !slices.Equal(got, want) {
		t.Errorf("statuses %v; want %v", got, want)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.n["no_user"] != 4 {
		t.Errorf("key fallbacks counted: %v; want 4 no_user", obs.n)
	}
}

// readmeShadow is the guide's shadow policy, as written.
func readmeShadow() ratelimit.Policy {
	return ratelimit.Policy{Name: "strict", Limit: 50, Window: time.Minute, Shadow: true} // README: as written, returned
}

// What the guide says of a shadow policy: evaluated on every request and reported in
// d.Results(), it never denies or appears in the rate-limit headers; with Response.Shadow,
// X-RateLimit-Shadow names it when it would have denied; its state counts only what it would
// have admitted, so removing Shadow enforces the verdicts it reported.
func TestReadmeShadow(t *testing.T) {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0)))
	limiter := mustNew(t, store, ratelimit.Policy{Name: "hourly", Limit: 1000, Window: time.Hour}, readmeShadow())
	var strict []bool
	h := ratelimit.Middleware(limiter, ratelimit.WithResponse(ratelimit.Response{Shadow: true}))(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, _ := ratelimit.DecisionFrom(r.Context())
			for _, res := range d.Results() {
				if res.Policy.Name == "strict" {
					strict = append(strict, res.Allowed)
				}
			}
		}))
	for i := range 60 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		shadow := w.Header().Get("X-RateLimit-Shadow")
		if w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Limit") != "1000" || (shadow == "strict") != (i >= 50) {
			t.Fatalf("request %d: %d, X-RateLimit-Limit %q, X-RateLimit-Shadow %q; want 200 under hourly's 1000, the shadow named from the 51st on",
				i+1, w.Code, w.Header().Get("X-RateLimit-Limit"), shadow)
		}
	}
	if len(strict) != 60 || slices.Contains(strict[:50], false) || slices.Contains(strict[50:], true) {
		t.Errorf("strict's verdicts in d.Results(): %v; want 50 admitted, then 10 denied", strict)
	}
	// Enforced, with the same Name: the count carries over, 50 admitted, so the next is refused.
	enforced := readmeShadow()
	enforced.Shadow = false
	if d := allow(t, mustNew(t, store, ratelimit.Policy{Name: "hourly", Limit: 1000, Window: time.Hour}, enforced), "ip:192.0.2.1", 1); d.Allowed || d.Policy.Name != "strict" {
		t.Errorf("strict enforced after its shadow run: %+v; want denied by strict", d)
	}
}

// policyDB is the database of the guide's Resolver code.
type policyDB map[string][]ratelimit.Policy

// PoliciesOf returns the policies of the client keyed by key: none for an unknown client, an
// error for one keyed "hdr:x-api-key:broken".
func (db policyDB) PoliciesOf(_ context.Context, key string) ([]ratelimit.Policy, error) {
	if key == "hdr:x-api-key:broken" {
		return nil, errors.New("the database is down")
	}
	return db[key], nil
}

// readmeResolver is the guide's Resolver, as written, over the database it names.
func readmeResolver(db policyDB) ratelimit.Option {
	return ratelimit.WithResolver(ratelimit.Resolver{Resolve: func(r ratelimit.Request, key string) ([]ratelimit.Policy, error) { // README: as written, returned
		return db.PoliciesOf(r.Context(), key) // nil, nil: the limiter's own policies
	}})
}

// What the guide says of a Resolver: a client's policies are what Resolve returns for its key;
// nil, nil gives the limiter's own; a failure gives the limiter's own too (never unlimited,
// never refused for it), goes to the error handler and is counted, resolver_failed.
func TestReadmeResolver(t *testing.T) {
	obs := &fallbackCounter{}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0)), ratelimit.WithObserver(obs.observer()))
	limiter := mustNew(t, store, ratelimit.Policy{Name: "default", Limit: 1, Window: time.Hour})
	db := policyDB{"hdr:x-api-key:gold": {{Name: "gold", Limit: 3, Window: time.Hour}}}
	var reported []error
	h := ratelimit.Middleware(limiter, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), readmeResolver(db),
		ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = append(reported, err) }))(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func(key string) (int, string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Header().Get("X-RateLimit-Limit")
	}
	for _, c := range []struct {
		key         string
		codes       []int
		limitHeader string
	}{
		{"gold", []int{200, 200, 200, 429}, "3"},
		{"unknown", []int{200, 429}, "1"},
		{"broken", []int{200, 429}, "1"},
	} {
		var got []int
		for range c.codes {
			code, limit := send(c.key)
			got = append(got, code)
			if limit != c.limitHeader {
				t.Errorf("key %s: X-RateLimit-Limit %q; want %s", c.key, limit, c.limitHeader)
			}
		}
		if !slices.Equal(got, c.codes) {
			t.Errorf("key %s: %v; want %v", c.key, got, c.codes)
		}
	}
	if len(reported) == 0 || !strings.Contains(reported[0].Error(), "the database is down") {
		t.Errorf("errors reported: %v; want the Resolver's", reported)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.n["resolver_failed"] != 2 {
		t.Errorf("key fallbacks counted: %v; want 2 resolver_failed", obs.n)
	}
}

// the guide's example of a policy beyond exact arithmetic is the error New returns for it, as
// written; and its largest burst at 1 per hour, 312,749, is New's.
func TestReadmeExactArithmeticBounds(t *testing.T) {
	block := readmetest.Block(t, "docs/policies.md", "so nothing is silently rounded:", "")
	_, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1000003, Window: 24 * time.Hour})
	if err == nil || err.Error() != strings.TrimSpace(block) {
		t.Errorf("New of 1000003 a day: %v\nthe guide shows:\n%s", err, block)
	}
	if _, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Hour, Burst: 312_749}); err != nil {
		t.Errorf("a burst of 312,749 at 1 per hour: %v; the guide says it is the largest that fits", err)
	}
	if _, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Hour, Burst: 312_750}); err == nil {
		t.Error("a burst of 312,750 at 1 per hour is admitted; the guide says 312,749 is the largest")
	}
	if _, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1e9, Window: time.Second, Burst: 1e9}); err != nil {
		t.Errorf("10^9 per second with a burst of 10^9: %v; the guide says it fits", err)
	}
}

// readmeRedis is the guide's Redis client and limiter, as written but for the server's address
// (TestReadmeRedis holds the two to the guide's block, the address aside).
func readmeRedis(addr string) (*ratelimit.Limiter, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	// or redis.NewFailoverClient (Sentinel), redis.NewClusterClient, redis.NewRing
	limiter, err := ratelimit.New(ratelimit.NewRedisStore(rdb, ratelimit.WithPrefix("myapp:rl:")),
		ratelimit.Policy{Limit: 10, Window: time.Second},
		ratelimit.Policy{Limit: 1000, Window: time.Hour})
	return limiter, err // README: the limiter is used as any other
}

// What the guide's Redis code does: checks run in Redis, under keys of the prefix it gives
// (myapp:rl:{identity}:...), both policies at once.
func TestReadmeRedis(t *testing.T) {
	if got, want := funcBody(t, "readmeRedis"), readmeGo(t, "docs/redis.md", "# Redis\n"); !slices.Equal(got, strings.Split(strings.ReplaceAll(strings.Join(want, "\n"), `Addr: "localhost:6379"`, "Addr: addr"), "\n")) {
		t.Fatalf("the guide's Redis code and readmeRedis differ, the address aside:\nREADME:\n%s\nreadmeRedis:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	limiter, err := readmeRedis(redistest.Addr(t))
	if err != nil {
		t.Fatal(err)
	}
	id := "ip:" + redistest.Prefix(t) // an identity of the test's own, under the guide's prefix
	d := allow(t, limiter, id, 1)
	if !d.Allowed || d.Remaining != 9 || len(d.Results()) != 2 {
		t.Fatalf("the first check: %+v; want admitted, 9 of 10 left, two results", d)
	}
	rdb := redistest.Standalone(t)
	for _, p := range []ratelimit.Policy{{Limit: 10, Window: time.Second}, {Limit: 1000, Window: time.Hour}} {
		key := ratelimit.StorageKey("myapp:rl:", id, p, false)
		if !strings.HasPrefix(key, "myapp:rl:{"+id+"}:") {
			t.Errorf("storage key %q; want it under myapp:rl:{%s}:", key, id)
		}
		if n, err := rdb.Exists(ctx, key).Result(); n != 1 || err != nil {
			t.Errorf("key %s in Redis: %d, %v; want it written", key, n, err)
		}
	}
}

// readmeLease is the guide's policy with a quota lease, as written.
func readmeLease() ratelimit.Policy {
	return ratelimit.Policy{Name: "tenant", Limit: 40_000, Window: time.Second, // README: as written, returned
		Algorithm: algorithms.FixedWindow{}, Lease: 20 * time.Millisecond}
}

// What the guide says of quota leases, with its policy over Redis on a clock that stands still:
// an identity seen twice takes a lease, and its next requests are admitted from it
// (observe.SourceLease) without a Redis call; the window admits exactly 40,000, and the next
// request is denied; New refuses a lease on another algorithm.
func TestReadmeLease(t *testing.T) {
	clock := fakeclock.New(fakeclock.T0)
	store := ratelimit.NewRedisStore(redistest.Standalone(t), ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithClock(clock))
	l := mustNew(t, store, readmeLease())
	sources := map[observe.Source]int{}
	for i := range 40_000 {
		d := allow(t, l, "tenant:1", 1)
		if !d.Allowed {
			t.Fatalf("request %d of 40,000 in the window: %+v; want admitted", i+1, d)
		}
		sources[d.Source]++
	}
	if d := allow(t, l, "tenant:1", 1); d.Allowed {
		t.Fatalf("the 40,001st request in the window: %+v; want denied", d)
	}
	if sources[observe.SourceLease] < 39_000 {
		t.Errorf("admitted by source: %v; want nearly all from leases", sources)
	}
	p := readmeLease()
	p.Algorithm = algorithms.SlidingLog{}
	if _, err := ratelimit.New(store, p); err == nil {
		t.Error("New accepted Lease on a sliding log; the guide says it refuses it")
	}
}

// readmeClose is the guide's closing of a Redis store, as written, around the servers that use it.
func readmeClose(rdb redis.UniversalClient, serve func(ratelimit.Store)) {
	store := ratelimit.NewRedisStore(rdb, ratelimit.WithPrefix("myapp:rl:"))
	defer store.Close() // after the servers that use it have stopped
	serve(store)        // README: the servers, until they stop
}

// What the guide says of Close: the store serves until it is closed; then its subscription's
// goroutine has ended and every call fails with an error that says the store is closed.
func TestReadmeClose(t *testing.T) {
	var (
		store ratelimit.Store
		l     *ratelimit.Limiter
	)
	readmeClose(redistest.Standalone(t), func(s ratelimit.Store) {
		store = s
		waitHearing(t, s)
		l = mustNew(t, s, ratelimit.Policy{Limit: 5, Window: time.Minute})
		if d := allow(t, l, "readme-close:"+redistest.Prefix(t), 1); !d.Allowed || !ratelimit.Listening(s) {
			t.Fatalf("the open store: %+v, listening %v; want admitted, and its subscription up", d, ratelimit.Listening(s))
		}
	})
	if ratelimit.Listening(store) {
		t.Error("the closed store's subscription still runs")
	}
	if _, err := l.Allow(context.Background(), "readme-close:"+redistest.Prefix(t)); !errors.Is(err, ratelimit.ErrStore) || !strings.Contains(err.Error(), "closed") {
		t.Errorf("a check of the closed store: %v; want a store error that says it is closed", err)
	}
}

// readmeTransport is docs/clients.md's http.Client limited by its transport, as written.
func readmeTransport(limiter *ratelimit.Limiter) *http.Client {
	client := &http.Client{Transport: &ratelimit.Transport{Limiter: limiter}} // Key: the host by default
	return client                                                             // README: what the caller uses
}

// What docs/clients.md says of the Transport: each request takes its turn under its host, so
// a host's second request at 1 a minute is not sent (its turn comes after the request's
// deadline, so it fails at once), while another host's first request goes.
func TestReadmeTransport(t *testing.T) {
	limiter := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute})
	client := readmeTransport(limiter)
	var served [2]int
	var servers [2]*httptest.Server
	for i := range servers {
		servers[i] = httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served[i]++ }))
		defer servers[i].Close()
	}
	get := func(srv *httptest.Server) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(servers[0]); err != nil {
		t.Fatalf("the first request to a host: %v", err)
	}
	if err := get(servers[0]); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the second request to the host within the minute: %v; want it not sent, its turn after its deadline", err)
	}
	if err := get(servers[1]); err != nil {
		t.Errorf("the first request to another host: %v; want it sent, under a quota of its own", err)
	}
	if served != [2]int{1, 1} {
		t.Errorf("the servers got %v requests; want one each", served)
	}
}
