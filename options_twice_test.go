package ratelimit_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// TrustProxies given twice for the same header trusts both sets (issue: the second replaced
// the first, and every client behind the first load balancer shared its quota): two clients
// behind a proxy of each set, 1 a minute each, are each admitted once and refused the second
// time, and a client is the same client through a proxy of either set.
func TestTrustProxiesTwiceAddsUp(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0))), ratelimit.Policy{Limit: 1, Window: time.Minute})
	g, err := ratelimit.NewGuard(l, ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8"),
		ratelimit.TrustProxies("x-forwarded-for", "2001:db8::/32"))
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.FromGuard(g)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func(peer, client string) int {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", client)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	clients := [][2]string{{"10.0.0.1:1000", "198.51.100.1"}, {"10.0.0.1:1000", "198.51.100.2"},
		{"[2001:db8::1]:1000", "198.51.100.3"}, {"[2001:db8::1]:1000", "198.51.100.4"}}
	for _, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		for _, c := range clients {
			if got := send(c[0], c[1]); got != want {
				t.Errorf("client %s behind %s: %d; want %d", c[1], c[0], got, want)
			}
		}
	}
	if got := send("[2001:db8::1]:1000", "198.51.100.1"); got != http.StatusTooManyRequests {
		t.Errorf("the first client through a proxy of the second set: %d; want 429, its quota spent", got)
	}
}

// TrustProxies for two headers is refused: a guard reads the client's address from one
// header, and which one would silently decide whose clients share a quota.
func TestTrustProxiesTwoHeadersRefused(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute})
	_, err := ratelimit.NewGuard(l, ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8"),
		ratelimit.TrustProxies("X-Real-IP", "192.0.2.0/24"))
	if err == nil || !strings.Contains(err.Error(), "X-Forwarded-For") || !strings.Contains(err.Error(), "X-Real-Ip") {
		t.Fatalf("TrustProxies for X-Forwarded-For and X-Real-IP: %v; want it refused, naming both headers", err)
	}
}

// Every other guard option given twice is refused by NewGuard, naming it: the second would
// silently replace the first (a second WithKey would key by
// another identity, a second WithPolicies drop the first's policies). Access's Skips add up
// instead (TestAccessSkipsAddUp).
func TestGuardOptionGivenTwiceRefused(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 10, Window: time.Minute},
		ratelimit.Policy{Name: "slots", Algorithm: algorithms.InFlight{}, Limit: 2, Window: time.Minute})
	policies := []ratelimit.Policy{{Limit: 10, Window: time.Minute}, {Name: "slots", Algorithm: algorithms.InFlight{}, Limit: 2, Window: time.Minute}}
	resolver := ratelimit.Resolver{Resolve: func(ratelimit.Request, string) ([]ratelimit.Policy, error) { return nil, nil }}
	for name, opts := range map[string][2]ratelimit.Option{
		"WithPolicies":                   {ratelimit.WithPolicies(policies...), ratelimit.WithPolicies(policies...)},
		"WithKey":                        {ratelimit.WithKey(ratelimit.KeyByIP()), ratelimit.WithKey(ratelimit.KeyByRoute())},
		"WithAccess(Access{MissingKey})": {ratelimit.WithAccess(ratelimit.Access{MissingKey: 401}), ratelimit.WithAccess(ratelimit.Access{MissingKey: 400})},
		"WithCost":                       {ratelimit.WithCost(func(ratelimit.Request) int64 { return 1 }), ratelimit.WithCost(func(ratelimit.Request) int64 { return 2 })},
		"WithTimeout":                    {ratelimit.WithTimeout(time.Second), ratelimit.WithTimeout(time.Second)},
		"WithAccess":                     {ratelimit.WithAccess(ratelimit.Access{Allow: []string{"10.0.0.0/8"}}), ratelimit.WithAccess(ratelimit.Access{Deny: []string{"203.0.113.0/24"}})},
		"WithErrorHandler":               {ratelimit.WithErrorHandler(func(ratelimit.Request, error) {}), ratelimit.WithErrorHandler(func(ratelimit.Request, error) {})},
		"WithResponse":                   {ratelimit.WithResponse(ratelimit.Response{ProblemJSON: true}), ratelimit.WithResponse(ratelimit.Response{FailClosed: 503})},
		"CountIf":                        {ratelimit.CountIf(func(int) bool { return true }), ratelimit.CountIf(func(int) bool { return true })},
		"IPv6Prefix":                     {ratelimit.IPv6Prefix(64), ratelimit.IPv6Prefix(48)},
		"WaitForSlot":                    {ratelimit.WaitForSlot(time.Second), ratelimit.WaitForSlot(2 * time.Second)},
		"WithResolver":                   {ratelimit.WithResolver(resolver), ratelimit.WithResolver(resolver)},
	} {
		if _, err := ratelimit.NewGuard(l, opts[0]); err != nil {
			t.Fatalf("%s once: %v", name, err)
		}
		_, err := ratelimit.NewGuard(l, opts[0], opts[1])
		if err == nil || !strings.Contains(err.Error(), name+" given twice") {
			t.Errorf("%s given twice: %v; want it refused, naming it", name, err)
		}
	}
}

// deny429 is a Response.Deny function: a JSON body of its own.
func deny429(ratelimit.Request, ratelimit.Decision) (int, string, []byte) {
	return http.StatusTooManyRequests, "application/json", []byte(`{"error":"slow down"}`)
}

// A store option given twice is refused when the store is made, as an invalid store option is
// (a panic naming it: a store has no error to return): the second would silently replace the
// first (a second WithObserver would leave the first's metrics empty, a second WithPrefix
// write under another prefix than the one ACLs and tools were given).
func TestStoreOptionGivenTwiceRefused(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never called: the store is refused first
	defer rdb.Close()
	clock := fakeclock.New(fakeclock.T0)
	observer, logger := newRecorder(), slog.New(slog.DiscardHandler)
	panics := func(name string, make func()) {
		t.Helper()
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), name+" given twice") {
				t.Errorf("%s given twice: %v; want the store refused, naming it", name, p)
			}
		}()
		make()
	}
	both := map[string][2]ratelimit.StoreOption{
		"WithPrefix":   {ratelimit.WithPrefix("a:"), ratelimit.WithPrefix("b:")},
		"WithClock":    {ratelimit.WithClock(clock), ratelimit.WithClock(clock)},
		"WithObserver": {ratelimit.WithObserver(observer.observer()), ratelimit.WithObserver(observer.observer())},
		"WithLogger":   {ratelimit.WithLogger(logger), ratelimit.WithLogger(logger)},
	}
	for name, o := range both {
		panics(name, func() { ratelimit.NewMemoryStore(o[0], o[1]) })
		panics(name, func() { ratelimit.NewRedisStore(rdb, o[0], o[1]) })
	}
	panics("WithMaxKeys", func() { ratelimit.NewMemoryStore(ratelimit.WithMaxKeys(100), ratelimit.WithMaxKeys(200)) })
	for name, o := range map[string][2]ratelimit.RedisOption{
		"WithCompactState": {ratelimit.WithCompactState(), ratelimit.WithCompactState()},
		"WithHashState":    {ratelimit.WithHashState(), ratelimit.WithHashState()},
		"WithBreaker":      {ratelimit.WithBreaker(5, time.Second), ratelimit.WithBreaker(0, 0)},
		"WithDenialCache":  {ratelimit.WithDenialCache(10), ratelimit.WithDenialCache(0)},
		"WithFallback":     {ratelimit.WithFallback(0.5), ratelimit.WithFallback(0.25)},
		"WithCallTimeout":  {ratelimit.WithCallTimeout(time.Second), ratelimit.WithCallTimeout(time.Minute)},
	} {
		panics(name, func() { ratelimit.NewRedisStore(rdb, o[0], o[1]) })
	}
}

// Response.ProblemJSON and Response.Deny together: Deny answers the denials, and
// the guard's other refusals (here a request without its key, Access.MissingKey) are problem
// documents.
func TestProblemJSONWithDeny(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0))), ratelimit.Policy{Limit: 1, Window: time.Minute})
	h := ratelimit.Middleware(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.WithAccess(ratelimit.Access{MissingKey: http.StatusUnauthorized}),
		ratelimit.WithResponse(ratelimit.Response{ProblemJSON: true, Deny: deny429}))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func(key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/", nil)
		if key != "" {
			r.Header.Set("X-API-Key", key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	send("k")
	if w := send("k"); w.Code != http.StatusTooManyRequests || w.Header().Get("Content-Type") != "application/json" || w.Body.String() != `{"error":"slow down"}` {
		t.Errorf("a denial: %d %q %q; want Deny's", w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
	if w := send(""); w.Code != http.StatusUnauthorized || w.Header().Get("Content-Type") != "application/problem+json" {
		t.Errorf("a request without its key: %d %q; want 401, a problem document", w.Code, w.Header().Get("Content-Type"))
	}
}
