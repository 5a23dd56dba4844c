package ratelimit_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// readmeUseIt is README's "Use it" code, as written, but for its last line: it returns the
// handler that README passes to http.ListenAndServe. TestReadmeCodeAsWritten keeps the two
// the same.
func readmeUseIt(loginHandler http.Handler) http.Handler {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(),
		ratelimit.Policy{Limit: 10, Window: time.Second},
		ratelimit.Policy{Limit: 1000, Window: time.Hour})
	if err != nil {
		log.Fatal(err) // an invalid policy: the error names the field to fix
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		if d, ok := ratelimit.DecisionFrom(r.Context()); ok {
			fmt.Fprintf(w, "%d requests left\n", d.Remaining)
		}
	})
	// A stricter limit on one route, over the same store, keyed by client IP and route:
	mux.Handle("POST /login", ratelimit.Middleware(limiter,
		ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute, Algorithm: algorithms.SlidingLog{}}),
		ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute())),
		ratelimit.WithResponse(ratelimit.Response{FailClosed: http.StatusServiceUnavailable}),
	)(loginHandler))

	// Every route, keyed by the client's IP address. Register the routes first:
	// ListenAndServe blocks.
	return ratelimit.Middleware(limiter)(mux) // README: ListenAndServe
}

// readmeGo returns the lines of the first Go block of doc (README.md or a guide under docs/)
// after marker, as written, without its imports and without a line that calls
// ListenAndServe (which blocks).
func readmeGo(t *testing.T, doc, marker string) []string {
	t.Helper()
	block := readmetest.Block(t, doc, marker, "go")
	if strings.HasPrefix(block, "import (") {
		_, block, _ = strings.Cut(block, ")\n\n")
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		if !strings.Contains(line, "ListenAndServe(") {
			lines = append(lines, line)
		}
	}
	return lines
}

// funcBody returns the lines of the body of func name in readme_test.go or
// readme_snippets_test.go, one tab less, but those that stand for a README line that cannot
// run here (marked "// README: ..."). A line marked "// README: as written, returned" is
// the guide's line behind a return: the guide shows a value (an option, a policy) that the function
// hands to its test.
func funcBody(t *testing.T, name string) []string {
	t.Helper()
	var source []byte
	for _, file := range []string{"readme_test.go", "readme_snippets_test.go", "readme_calendar_test.go"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		source = append(source, b...)
	}
	_, body, ok := strings.Cut(string(source), "\nfunc "+name+"(")
	if ok {
		_, body, ok = strings.Cut(body, "{\n")
	}
	if ok {
		body, _, ok = strings.Cut(body, "\n}\n")
	}
	if !ok {
		t.Fatalf("readme_test.go has no func %s", name)
	}
	var lines []string
	for _, line := range strings.Split(body, "\n") {
		if l, ok := strings.CutSuffix(line, " // README: as written, returned"); ok {
			indent := l[:len(l)-len(strings.TrimLeft(l, "\t"))]
			line = indent + strings.TrimPrefix(strings.TrimLeft(l, "\t"), "return ")
		}
		if !strings.Contains(line, "// README: ") {
			lines = append(lines, strings.TrimPrefix(line, "\t"))
		}
	}
	return lines
}

// The Go blocks of README and the guides that are run as written are the bodies of these
// functions, line for line.
func TestReadmeCodeAsWritten(t *testing.T) {
	for _, c := range []struct{ doc, marker, name string }{
		{"README.md", "## Use it", "readmeUseIt"},
		{"docs/policies.md", "## In-flight limits", "readmeInFlight"},
		{"docs/redis.md", "## Millions of identities: compact state", "readmeCompact"},
		{"docs/redis.md", "## Several windows: hash state", "readmeHashState"},
		{"docs/policies.md", "# Policies and algorithms", "readmePolicies"},
		{"docs/outages.md", "# When Redis is slow, down or flooded", "readmeResilience"},
		{"docs/rules.md", "## Plans (tiers)", "readmeTiers"},
		{"docs/keys.md", "address that is not a trusted proxy is the client:", "readmeTrustProxies"},
		{"docs/keys.md", "ratelimit.Access{MissingKey: http.StatusUnauthorized})))", "readmeUserNetHTTP"},
		{"docs/policies.md", "**Try a limit before enforcing it.**", "readmeShadow"},
		{"docs/rules.md", "## Limits from your own data", "readmeResolver"},
		{"docs/redis.md", "can lease instead (opt-in, per policy):", "readmeLease"},
		{"docs/redis.md", "**Close a store you stop using.**", "readmeClose"},
		{"docs/clients.md", "An `http.Client` is limited by its transport", "readmeTransport"},
		{"README.md", "## Quotas by the calendar", "readmeCalendar"},
	} {
		if got, want := funcBody(t, c.name), readmeGo(t, c.doc, c.marker); !slices.Equal(got, want) {
			t.Errorf("%s's code under %q and %s differ:\n%s:\n%s\n%s:\n%s", c.doc, c.marker, c.name, c.doc, strings.Join(want, "\n"), c.name, strings.Join(got, "\n"))
		}
	}
}

// What README's "Use it" code does: /items/{id} tells the client what it has left of 10 a
// second; the login route admits 5 a minute per client and route; clients are apart. (The
// store is the guide's, on the system clock: nothing here depends on less than a minute passing
// between two requests.)
func TestReadmeUseIt(t *testing.T) {
	logins := 0
	h := readmeUseIt(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { logins++ }))
	send := func(method, path, ip string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, nil)
		r.RemoteAddr = ip + ":1234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := send("GET", "/items/7", "192.0.2.1"); w.Code != http.StatusOK || w.Body.String() != "9 requests left\n" {
		t.Fatalf("GET /items/7: %d %q; want 200 \"9 requests left\"", w.Code, w.Body.String())
	}
	for i := range 5 {
		if w := send("POST", "/login", "192.0.2.2"); w.Code != http.StatusOK {
			t.Fatalf("login %d: %d; want 200", i+1, w.Code)
		}
	}
	if w := send("POST", "/login", "192.0.2.2"); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("the 6th login in a minute: %d, Retry-After %q; want 429 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	if logins != 5 {
		t.Errorf("the login handler ran %d times; want 5", logins)
	}
	if w := send("POST", "/login", "192.0.2.3"); w.Code != http.StatusOK {
		t.Errorf("another client's login: %d; want 200", w.Code)
	}
}

// readmeInFlight is the guide's in-flight code, as written, over the store, mux and export
// handler it names.
func readmeInFlight(store ratelimit.Store, mux *http.ServeMux, exportHandler http.Handler) {
	limiter, _ := ratelimit.New(store,
		ratelimit.Policy{Name: "exports", Limit: 100, Window: time.Hour},
		ratelimit.Policy{Name: "exports-running", Limit: 2, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	mux.Handle("POST /export", ratelimit.Middleware(limiter,
		ratelimit.WaitForSlot(2*time.Second),                                                      // optional: wait up to 2 s for a slot
		ratelimit.WithResponse(ratelimit.Response{InFlightStatus: http.StatusServiceUnavailable}), // optional: 503 instead of 429
	)(exportHandler))
}

// readmePolicies is the guide's list of policies and check, as written, over the store and
// context it names.
func readmePolicies(ctx context.Context, store ratelimit.Store) (ratelimit.Decision, error) {
	limiter, err := ratelimit.New(store,
		ratelimit.Policy{Limit: 10, Window: time.Second}, // GCRA
		ratelimit.Policy{Limit: 100, Window: time.Minute, Algorithm: algorithms.SlidingCounter{}},
		ratelimit.Policy{Name: "hourly", Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}},
		ratelimit.Policy{Limit: 5, Window: 10 * time.Second, Burst: 10, Algorithm: algorithms.TokenBucket{}},
	)
	d, err := limiter.AllowN(ctx, "user:42", 1)
	// d.Allowed, d.Limit, d.Remaining, d.ResetAfter, d.RetryAfter, d.Delay, d.Policy, d.Results()
	return d, err // README: what the caller reads
}

// What the guide's policy list does: the first check is admitted by all four, and the decision
// reports the policy with the least left (GCRA's 9 of 10, named as New names it) and every
// policy's result.
func TestReadmePolicies(t *testing.T) {
	d, err := readmePolicies(context.Background(), ratelimit.NewMemoryStore())
	if err != nil || !d.Allowed || d.Remaining != 9 || d.Limit != 10 || d.Policy.Name != "gcra-10-per-1s" || len(d.Results()) != 4 {
		t.Fatalf("%+v, %v; want admitted, 9 of 10 left under gcra-10-per-1s, 4 results", d, err)
	}
}

// readmeResilience is the guide's Redis store with its four options, as written, over the client
// and observer it names.
func readmeResilience(rdb redis.UniversalClient, metrics *ratelimit.Observer) ratelimit.Store {
	store := ratelimit.NewRedisStore(rdb,
		ratelimit.WithBreaker(5, 100*time.Millisecond), // the default: open after 5 failures in a row (at once if Redis refuses connections), probe at most 100 ms apart
		ratelimit.WithFallback(1.0/10),                 // meanwhile decide locally: 10 instances, a tenth of each limit
		ratelimit.WithDenialCache(100_000),             // the default holds 10,000 denials; 0 turns it off
		ratelimit.WithObserver(metrics))                // report every decision, failure and breaker change
	return store // README: what the caller uses
}

// What the guide's store options do: checks go to Redis and are reported; the denial that the
// admission spending the quota foretold is then answered by the denial cache; with Redis
// refusing, the local fallback decides.
func TestReadmeResilience(t *testing.T) {
	proxy := faultproxy.Start(t, redistest.Addr(t))
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, DialTimeout: time.Second})
	t.Cleanup(func() { client.Close() })
	obs := newRecorder()
	store := readmeResilience(client, obs.observer())
	waitHearing(t, store)
	l := mustNew(t, store, ratelimit.Policy{Limit: 1, Window: time.Hour})
	key := redistest.Prefix(t) + "k" // the store has the guide's default prefix: a key of the test's own
	for i, want := range []observe.Source{observe.SourceStore, observe.SourceDenialCache, observe.SourceDenialCache} {
		d, err := l.Allow(ctx, key)
		if err != nil || d.Source != want || d.Allowed != (i == 0) {
			t.Fatalf("request %d: %+v, %v; want allowed %v by %v", i+1, d, err, i == 0, want)
		}
	}
	proxy.Refuse()
	// Until the breaker opens: at once on a refused dial, or after five failures when the
	// first calls meet the connections the proxy closed (EOF) before any dial.
	for i := 0; ; i++ {
		if d, err := l.Allow(ctx, redistest.Prefix(t)+"other"); err != nil || d.Source != observe.SourceFallback {
			t.Fatalf("with Redis refusing: %+v, %v; want decided by the fallback", d, err)
		}
		if _, _, breaker := obs.snapshot(); len(breaker) > 0 || i == 20 {
			break
		}
	}
	if sources, _, breaker := obs.snapshot(); sources[observe.SourceStore] != 1 || sources[observe.SourceDenialCache] != 2 || len(breaker) == 0 {
		t.Errorf("reported: %v, breaker %v; want 1 decision by the store, 2 by the denial cache, the breaker opening", sources, breaker)
	}
}

// readmeTiers is the guide's plans, as written, over the limiter, plan function and mux it names.
func readmeTiers(limiter *ratelimit.Limiter, planOf func(ratelimit.Request) string, mux http.Handler) http.Handler {
	handler := ratelimit.Middleware(limiter, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
		ratelimit.WithResolver(ratelimit.Resolver{Tier: planOf, Tiers: map[string][]ratelimit.Policy{ // planOf: func(ratelimit.Request) string
			"free": {{Name: "api", Limit: 100, Window: time.Minute}},
			"pro":  {{Name: "api", Limit: 10_000, Window: time.Minute}},
		}}))(mux)
	return handler // README: what the caller serves
}

// What the guide's plans do: each API key gets its plan's limit (free: 100 a minute; pro:
// 10,000), and a request without a known plan the limiter's own (3 an hour here).
func TestReadmeTiers(t *testing.T) {
	limiter := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 3, Window: time.Hour})
	planOf := func(r ratelimit.Request) string { return r.Header("X-Plan") }
	h := readmeTiers(limiter, planOf, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func(key, plan string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", key)
		r.Header.Set("X-Plan", plan)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, c := range []struct {
		key, plan string
		limit     string
	}{{"a", "free", "100"}, {"b", "pro", "10000"}, {"c", "", "3"}, {"d", "gold", "3"}} {
		if w := send(c.key, c.plan); w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Limit") != c.limit {
			t.Errorf("plan %q: %d, X-RateLimit-Limit %q; want 200, %s", c.plan, w.Code, w.Header().Get("X-RateLimit-Limit"), c.limit)
		}
	}
	for range 99 {
		send("a", "free")
	}
	if w := send("a", "free"); w.Code != http.StatusTooManyRequests {
		t.Errorf("the 101st request of a free key in a minute: %d; want 429", w.Code)
	}
}

// readmeHashState is the guide's hash state, as written.
func readmeHashState(rdb redis.UniversalClient) (*ratelimit.Limiter, error) {
	store := ratelimit.NewRedisStore(rdb, ratelimit.WithPrefix("myapp:rl:"), ratelimit.WithHashState())
	limiter, err := ratelimit.New(store,
		ratelimit.Policy{Name: "burst", Limit: 10, Window: time.Second},
		ratelimit.Policy{Name: "hourly", Limit: 1000, Window: time.Hour},
		ratelimit.Policy{Name: "daily", Limit: 10000, Window: 24 * time.Hour, Algorithm: algorithms.FixedWindow{}})
	return limiter, err // README: the limiter is used as any other
}

// What the guide says of hash state: the three windows decide together (10 at once, then the
// burst's denial), and the identity's state is one hash, myapp:rl:{ip:...}, of three fields,
// which lives as long as the daily count needs.
func TestReadmeHashState(t *testing.T) {
	rdb := redistest.Standalone(t)
	limiter, err := readmeHashState(rdb)
	if err != nil {
		t.Fatal(err)
	}
	id := "ip:203.0.113.7"
	hash := "myapp:rl:{" + id + "}"
	rdb.Del(ctx, hash)
	for i := range 10 {
		if d := allow(t, limiter, id, 1); !d.Allowed {
			t.Fatalf("request %d: %+v; want admitted", i+1, d)
		}
	}
	if d := allow(t, limiter, id, 1); d.Allowed || d.Policy.Name != "burst" {
		t.Fatalf("the 11th request at once: %+v; want denied by burst", d)
	}
	if n := rdb.HLen(ctx, hash).Val(); n != 3 {
		t.Errorf("%s holds %d fields; want the three policies'", hash, n)
	}
	if ttl := rdb.PTTL(ctx, hash).Val(); ttl < time.Second {
		t.Errorf("PTTL of %s %v; want what the daily count needs (until the end of its day)", hash, ttl)
	}
	if n := rdb.Exists(ctx, ratelimit.StorageKey("myapp:rl:", id, ratelimit.Policy{Name: "burst", Limit: 10, Window: time.Second}, false)).Val(); n != 0 {
		t.Error("a key of the burst policy's own exists beside the hash")
	}
}

// readmeCompact is the guide's compact state, as written.
func readmeCompact(rdb redis.UniversalClient) (*ratelimit.Limiter, error) {
	store := ratelimit.NewRedisStore(rdb, ratelimit.WithPrefix("myapp:rl:"), ratelimit.WithCompactState())
	limiter, err := ratelimit.New(store, ratelimit.Policy{Limit: 100, Window: time.Hour})
	return limiter, err // README: the limiter is used as any other
}

// What the guide says of compact state: 100 requests an hour admitted, the 101st denied, and
// the identity's state under a 14-byte key holding a number below 1,000.
func TestReadmeCompact(t *testing.T) {
	rdb := redistest.Standalone(t)
	limiter, err := readmeCompact(rdb)
	if err != nil {
		t.Fatal(err)
	}
	id := "ip:" + strings.ReplaceAll(t.Name(), "/", "_")
	for i := range 100 {
		if d := allow(t, limiter, id, 1); !d.Allowed {
			t.Fatalf("request %d: %+v; want admitted", i+1, d)
		}
	}
	if d := allow(t, limiter, id, 1); d.Allowed {
		t.Fatalf("the 101st request: %+v; want denied", d)
	}
	key := ratelimit.StorageKey("myapp:rl:", id, ratelimit.Policy{Limit: 100, Window: time.Hour}, true)
	if v, err := rdb.Get(ctx, key).Int(); len(key) != 14 || err != nil || v >= 1000 {
		t.Errorf("key %q holds %d, %v; want 14 bytes holding a number below 1,000", key, v, err)
	}
}
