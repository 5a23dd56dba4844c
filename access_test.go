package ratelimit_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// scriptCalls is how many checks (scripts or functions) the clients sent through p.
func scriptCalls(p *faultproxy.Proxy) int {
	return p.Commands("FCALL") + p.Commands("FCALL_RO") + p.Commands("EVALSHA") + p.Commands("EVAL")
}

// accessServer is a handler behind a guard over a Redis store reached through a proxy that
// counts its commands, limited at 5 a minute per client IP, behind a trusted proxy at
// 127.0.0.1 (the peer httptest gives), with the Access given.
func accessServer(t *testing.T, a ratelimit.Access, opts ...ratelimit.Option) (http.Handler, *faultproxy.Proxy, *syncBuffer) {
	t.Helper()
	p := faultproxy.Start(t, redistest.Addr(t))
	client := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { client.Close() })
	logs := &syncBuffer{}
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithDenialCache(0),
		ratelimit.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	l := mustNew(t, store, ratelimit.Policy{Name: "api", Limit: 5, Window: time.Minute})
	opts = append(opts, ratelimit.WithAccess(a))
	g, err := ratelimit.NewGuard(l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ratelimit.FromGuard(g)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})), p, logs
}

// from sends a request whose peer is peer and whose X-Forwarded-For is xff ("" for none).
func from(h http.Handler, peer, xff string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = peer
	if xff != "" {
		r.Header.Set("X-Forwarded-For", xff)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// Issue 37's first statement: 1,000 requests of an allowed network through a trusted proxy
// all proceed, and Redis receives no check for them; the same address claimed by an untrusted
// peer in X-Forwarded-For is limited at 5.
func TestAccessAllowedNetworkAsksTheStoreNothing(t *testing.T) {
	h, p, logs := accessServer(t, ratelimit.Access{Allow: []string{"10.0.0.0/8"}},
		ratelimit.TrustProxies("X-Forwarded-For", "127.0.0.1"))
	from(h, "192.0.2.99:4000", "") // the store's first check loads its functions
	before := scriptCalls(p)
	for i := 0; i < 1000; i++ {
		w := from(h, "127.0.0.1:4000", "10.1.2.3")
		if w.Code != http.StatusOK {
			t.Fatalf("request %d from an allowed network: %d", i+1, w.Code)
		}
		if w.Header().Get("X-RateLimit-Limit") != "" {
			t.Fatalf("an allowed request has rate-limit headers: %v", w.Header())
		}
	}
	if n := scriptCalls(p) - before; n != 0 {
		t.Fatalf("1,000 allowed requests sent %d checks to Redis; want 0", n)
	}
	if !strings.Contains(logs.String(), "allowlisted") || strings.Count(logs.String(), "allowlisted") != 1 {
		t.Errorf("want one log line of the allow list, got:\n%s", logs.String())
	}
	// An untrusted peer claiming the address is limited by its own, at 5.
	admitted := 0
	for i := 0; i < 20; i++ {
		if from(h, "192.0.2.50:4000", "10.1.2.3").Code == http.StatusOK {
			admitted++
		}
	}
	if admitted != 5 {
		t.Fatalf("an untrusted peer sending X-Forwarded-For: 10.1.2.3 had %d of 20 admitted; want 5", admitted)
	}
	if scriptCalls(p)-before != 20 {
		t.Errorf("the untrusted peer's 20 requests sent %d checks; want 20", scriptCalls(p)-before)
	}
}

// A denied network is refused 403 without a store call; an IPv6 entry of /64 covers every
// address of that /64 and none outside it.
func TestAccessDeniedNetworkRefusedWithoutAStoreCall(t *testing.T) {
	h, p, logs := accessServer(t, ratelimit.Access{Deny: []string{"203.0.113.0/24", "2001:db8:1:2::/64"}})
	before := scriptCalls(p)
	for _, peer := range []string{"203.0.113.9:1", "203.0.113.250:1", "[2001:db8:1:2::1]:1", "[2001:db8:1:2:ffff::7]:1"} {
		w := from(h, peer, "")
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "denied") {
			t.Errorf("%s: %d %q; want 403 and a body saying it is denied", peer, w.Code, w.Body.String())
		}
	}
	if n := scriptCalls(p) - before; n != 0 {
		t.Fatalf("denied requests sent %d checks to Redis; want 0", n)
	}
	for _, peer := range []string{"203.0.114.1:1", "[2001:db8:1:3::1]:1"} {
		if w := from(h, peer, ""); w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Limit") != "5" {
			t.Errorf("%s, outside the denied networks: %d %v; want 200, limited", peer, w.Code, w.Header())
		}
	}
	if strings.Count(logs.String(), "denylisted") != 1 || !strings.Contains(logs.String(), "client_ip=203.0.113.9") {
		t.Errorf("want one log line naming the first denied client, got:\n%s", logs.String())
	}
}

// Deny wins over allow, for networks and keys alike; keys match the key function's key; a
// request whose key function finds no key is matched by its network only.
func TestAccessDenyWinsAndKeys(t *testing.T) {
	store := ratelimit.NewMemoryStore()
	l := mustNew(t, store, ratelimit.Policy{Name: "api", Limit: 1, Window: time.Hour})
	h := ratelimit.Middleware(l,
		ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
		ratelimit.WithAccess(ratelimit.Access{
			Allow:     []string{"10.0.0.0/8"},
			Deny:      []string{"10.66.0.0/16"},
			AllowKeys: []string{"hdr:x-api-key:monitor"},
			DenyKeys:  []string{"hdr:x-api-key:revoked"},
			Status:    http.StatusUnauthorized,
			Body:      "this key is revoked.",
		}),
		ratelimit.WithErrorHandler(func(ratelimit.Request, error) {}),
	)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func(peer, key string) int {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = peer
		if key != "" {
			r.Header.Set("X-API-Key", key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i, c := range []struct {
		peer, key string
		want      int
	}{
		{"10.66.1.1:1", "", 401},                      // in the allowed /8 and the denied /16: denied
		{"10.1.1.1:1", "revoked", 401},                // an allowed network, a denied key: denied
		{"192.0.2.1:1", "monitor", 200},               // an allowed key, anywhere, unlimited:
		{"192.0.2.1:1", "monitor", 200},               // ... again, over a limit of 1
		{"10.1.1.1:1", "", 200},                       // an allowed network without a key: unlimited
		{"10.1.1.1:1", "", 200},                       // ... again
		{"192.0.2.1:1", "customer", 200},              // neither: limited at 1
		{"192.0.2.1:1", "customer", 429},              // ...
		{"192.0.2.9:1", "hdr:x-api-key:revoked", 200}, // the raw value of another form is not the key
	} {
		if got := send(c.peer, c.key); got != c.want {
			t.Errorf("case %d (%s, key %q): %d, want %d", i, c.peer, c.key, got, c.want)
		}
	}
}

// The requests of each verdict are counted under their own result, by the store's observer.
func TestAccessResultsObserved(t *testing.T) {
	obs := &answers{}
	store := ratelimit.NewMemoryStore(ratelimit.WithObserver(obs.observer()))
	l := mustNew(t, store, ratelimit.Policy{Name: "api", Limit: 5, Window: time.Hour})
	h := ratelimit.Middleware(l, ratelimit.WithAccess(ratelimit.Access{Allow: []string{"10.0.0.1"}, Deny: []string{"10.0.0.2"}}))(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for i := 0; i < 3; i++ {
		from(h, "10.0.0.1:1", "")
		from(h, "10.0.0.2:1", "")
		from(h, "10.0.0.3:1", "")
	}
	counts := obs.take()
	if counts[observe.ResultAllowlisted] != 3 || counts[observe.ResultDenylisted] != 3 || counts[observe.ResultAllowed] != 3 {
		t.Fatalf("results = %v; want 3 allowlisted, 3 denylisted, 3 allowed", counts)
	}
	if observe.ResultAllowlisted.String() != "allowlisted" || observe.ResultDenylisted.String() != "denylisted" {
		t.Errorf("labels %q, %q", observe.ResultAllowlisted, observe.ResultDenylisted)
	}
}

// A list that cannot be used is refused when the guard is made, naming the entry.
func TestAccessRefusesBadLists(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Second})
	for _, c := range []struct {
		a    ratelimit.Access
		want string
	}{
		{ratelimit.Access{Allow: []string{"10.0.0.0/8", "10.0.0/8"}}, "Allow[1]"},
		{ratelimit.Access{Deny: []string{"10.0.0.0/8", "10.9.9.9/8"}}, "twice"},
		{ratelimit.Access{AllowKeys: []string{"k", "k"}}, "AllowKeys[1]"},
		{ratelimit.Access{AllowKeys: []string{"k"}, DenyKeys: []string{"k"}}, "AllowKeys and in DenyKeys"},
		{ratelimit.Access{Deny: []string{"10.0.0.1"}, Status: 200}, "Status 200"},
		{ratelimit.Access{}, "lists nothing"},
	} {
		_, err := ratelimit.NewGuard(l, ratelimit.WithAccess(c.a))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "WithAccess") {
			t.Errorf("WithAccess(%+v): %v; want an error naming %q", c.a, err, c.want)
		}
	}
}

// The lists are read before Skip: a denied client is refused on a skipped route too, with the
// lists and Skip in one Access or in two.
func TestAccessDenyBeforeSkip(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Hour})
	all := func(ratelimit.Request) bool { return true }
	deny := []string{"203.0.113.0/24"}
	for name, opts := range map[string][]ratelimit.Option{
		"one Access": {ratelimit.WithAccess(ratelimit.Access{Deny: deny, Skip: all})},
		"two Access": {ratelimit.WithAccess(ratelimit.Access{Skip: all}), ratelimit.WithAccess(ratelimit.Access{Deny: deny})},
	} {
		h := ratelimit.Middleware(l, opts...)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		if w := from(h, "203.0.113.1:1", ""); w.Code != http.StatusForbidden {
			t.Errorf("%s: a denied client on a skipped route: %d, want 403", name, w.Code)
		}
		for range 3 {
			if w := from(h, "192.0.2.1:1", ""); w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Limit") != "" {
				t.Errorf("%s: another client on a skipped route: %d %v, want 200 without rate-limit headers", name, w.Code, w.Header())
			}
		}
	}
}

// Skips add up: a second Access with a Skip exempts what it skips too, where a second Skip had
// replaced the first (or been refused), and lists beside them still come first.
func TestAccessSkipsAddUp(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Hour})
	path := func(p string) func(ratelimit.Request) bool {
		return func(r ratelimit.Request) bool { return r.Path() == p }
	}
	h := ratelimit.Middleware(l, ratelimit.WithAccess(ratelimit.Access{Skip: path("/healthz")}),
		ratelimit.WithAccess(ratelimit.Access{Skip: path("/metrics"), Deny: []string{"203.0.113.0/24"}}),
	)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	get := func(p, peer string) int {
		r := httptest.NewRequest("GET", p, nil)
		r.RemoteAddr = peer
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for _, p := range []string{"/healthz", "/metrics"} {
		for i := range 3 {
			if code := get(p, "192.0.2.1:1"); code != http.StatusOK {
				t.Errorf("%s, request %d, 1 an hour: %d; want 200, skipped", p, i, code)
			}
		}
	}
	if a, b := get("/items", "192.0.2.1:1"), get("/items", "192.0.2.1:1"); a != http.StatusOK || b != http.StatusTooManyRequests {
		t.Errorf("a path neither skips, 1 an hour: %d then %d; want 200 then 429", a, b)
	}
	if code := get("/healthz", "203.0.113.7:1"); code != http.StatusForbidden {
		t.Errorf("a denied network's health check: %d; want 403", code)
	}
}

// A client whose address the guard cannot read — behind a trusted proxy, a forwarding header
// too long or that does not parse, which the proxy passed on after appending the real address
// — is refused as a bad request where Deny networks are set, and the error reported: it was
// let past the Deny networks, unlogged, and a key function that reads no address served it.
func TestAccessRefusesAnUnreadableAddress(t *testing.T) {
	for _, tc := range []struct{ name, header, plain, crafted string }{
		{"a long X-Forwarded-For", "X-Forwarded-For", "203.0.113.5", strings.Repeat("1.1.1.1,", 520) + " 203.0.113.5"},
		{"a Forwarded that does not parse", "Forwarded", "for=203.0.113.5", "for=1.1.1.1 junk, for=203.0.113.5"},
		{"a Forwarded of 65 elements", "Forwarded", "for=203.0.113.5", strings.Repeat("for=1.1.1.1,", 64) + "for=203.0.113.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var results []observe.Result
			obs := &ratelimit.Observer{Answered: func(e observe.RequestEvent) { results = append(results, e.Result) }}
			store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()), ratelimit.WithObserver(obs))
			l := mustNew(t, store, ratelimit.Policy{Name: "p", Limit: 100, Window: time.Minute})
			errs := 0
			h := ratelimit.Middleware(l,
				ratelimit.TrustProxies(tc.header, "10.0.0.1"),
				ratelimit.WithAccess(ratelimit.Access{Deny: []string{"203.0.113.0/24"}}),
				ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
				ratelimit.WithErrorHandler(func(ratelimit.Request, error) { errs++ }),
			)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			send := func(v string) int {
				r := httptest.NewRequest("GET", "/", nil)
				r.RemoteAddr = "10.0.0.1:4000" // the trusted load balancer
				r.Header.Set(tc.header, v)
				r.Header.Set("X-API-Key", "k1")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w.Code
			}
			if got := send(tc.plain); got != http.StatusForbidden {
				t.Fatalf("the denied client with a plain header: %d, want 403", got)
			}
			if got := send(tc.crafted); got != http.StatusBadRequest || errs != 1 || results[1] != observe.ResultRejected {
				t.Errorf("the denied client 203.0.113.5 with a crafted %s (%d bytes): %d, error handler called %d times, results %v; want 400, once, rejected",
					tc.header, len(tc.crafted), got, errs, results)
			}
		})
	}
}

// A key list names keys as the key function returns them, and a built-in key function gives
// a long value, or one that starts with '#', as its digest: listed as written, such a key is
// still matched (a revoked JWT in DenyKeys is refused, not served), and listed as its digest
// too.
func TestAccessKeysMatchTheBoundedFormOfLongValues(t *testing.T) {
	long := strings.Repeat("x", 300)
	cases := []struct {
		name  string
		key   ratelimit.KeyFunc
		entry string
		set   func(r *http.Request)
	}{
		{"short header value", ratelimit.KeyByHeader("X-API-Key"), "hdr:x-api-key:revoked-key", func(r *http.Request) { r.Header.Set("X-API-Key", "revoked-key") }},
		{"300-byte header value", ratelimit.KeyByHeader("X-API-Key"), "hdr:x-api-key:" + long, func(r *http.Request) { r.Header.Set("X-API-Key", long) }},
		{"header value starting with #", ratelimit.KeyByHeader("X-API-Key"), "hdr:x-api-key:#revoked", func(r *http.Request) { r.Header.Set("X-API-Key", "#revoked") }},
		{"300-byte header value with colons", ratelimit.KeyByHeader("X-API-Key"), "hdr:x-api-key:a:b:" + long, func(r *http.Request) { r.Header.Set("X-API-Key", "a:b:"+long) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, list := range []string{"DenyKeys", "AllowKeys"} {
				l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Hour})
				a := ratelimit.Access{DenyKeys: []string{c.entry}}
				want := http.StatusForbidden
				if list == "AllowKeys" {
					a = ratelimit.Access{AllowKeys: []string{c.entry}}
					want = http.StatusOK // allowlisted: never limited, so the second request passes too
				}
				g, err := ratelimit.NewGuard(l, ratelimit.WithKey(c.key), ratelimit.WithAccess(a))
				if err != nil {
					t.Fatal(err)
				}
				h := ratelimit.FromGuard(g)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
				for range 2 {
					r := httptest.NewRequest("GET", "/", nil)
					c.set(r)
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					if w.Code != want {
						t.Fatalf("%s [%q…]: status %d, want %d", list, c.entry[:min(len(c.entry), 24)], w.Code, want)
					}
				}
			}
		})
	}
}
