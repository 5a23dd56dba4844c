package ratelimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// TestMiddlewareAllocations holds the net/http middleware to its own allocations per request:
// those of one request through Middleware(l)(handler), less those of l.Allow for the same key
// (the store's share, which is not the middleware's). The request is built, and the writer's
// header map cleared, as tools/benchtable's handlerAllocs does for the Redis figure, so the
// budget here is what the middleware adds there. Allocation counts are deterministic.
//
// An admitted request costs two: its key ("ip:203.0.113.7"), and one object that holds the
// handler's request, its context with the decision, the header values' slices and their bytes.
func TestMiddlewareAllocations(t *testing.T) {
	never := ratelimit.Policy{Limit: 1_000_000, Window: time.Second} // never denies the test's client
	once := ratelimit.Policy{Limit: 1, Window: time.Hour}            // denies it from the second request
	for _, c := range []struct {
		name     string
		policies []ratelimit.Policy
		opts     []ratelimit.Option
		apiKey   string // the request's X-API-Key, if any
		observed bool   // the store has an observer: the request's report waits for its handler
		want     float64
	}{
		{name: "admitted", policies: []ratelimit.Policy{never}, want: 2},
		{name: "two policies", policies: []ratelimit.Policy{never, {Name: "hour", Limit: 1e9, Window: time.Hour}}, want: 2},
		{name: "IETF headers too", policies: []ratelimit.Policy{never},
			opts: []ratelimit.Option{ratelimit.WithResponse(ratelimit.Response{IETFDraft: 11})}, want: 2},
		{name: "a shadow policy denies", policies: []ratelimit.Policy{never, {Name: "shadow", Limit: 1, Window: time.Hour, Shadow: true}},
			opts: []ratelimit.Option{ratelimit.WithResponse(ratelimit.Response{Shadow: true})}, want: 2},
		{name: "key by header", policies: []ratelimit.Policy{never}, apiKey: "k1",
			opts: []ratelimit.Option{ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key"))}, want: 2},
		{name: "key by header, else IP", policies: []ratelimit.Policy{never},
			opts: []ratelimit.Option{ratelimit.WithKey(ratelimit.KeyOr(ratelimit.KeyByHeader("X-API-Key"), ratelimit.KeyByIP()))}, want: 2},
		// The IP part, then the joined key; the method's part is a constant.
		{name: "key by IP and method", policies: []ratelimit.Policy{never},
			opts: []ratelimit.Option{ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByMethod()))}, want: 3},
		// CountIf adds the writer that records the handler's status.
		{name: "CountIf", policies: []ratelimit.Policy{never},
			opts: []ratelimit.Option{ratelimit.CountIf(func(s int) bool { return s == http.StatusOK })}, want: 3},
		// The key, the header values' string, one array for every header, the body.
		{name: "denied", policies: []ratelimit.Policy{once}, want: 4},
		{name: "denied, problem JSON", policies: []ratelimit.Policy{once}, opts: []ratelimit.Option{ratelimit.WithResponse(ratelimit.Response{ProblemJSON: true})}, want: 4},
		{name: "skipped", policies: []ratelimit.Policy{never},
			opts: []ratelimit.Option{ratelimit.WithAccess(ratelimit.Access{Skip: func(ratelimit.Request) bool { return true }})}, want: 0},
		// The report rides in the outcome the one object holds already.
		{name: "admitted, observed", policies: []ratelimit.Policy{never}, observed: true, want: 2},
		// The one object, for the report alone: a guard inside would take it over.
		{name: "skipped, observed", policies: []ratelimit.Policy{never}, observed: true,
			opts: []ratelimit.Option{ratelimit.WithAccess(ratelimit.Access{Skip: func(ratelimit.Request) bool { return true }})}, want: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var so []ratelimit.StoreOption
			if c.observed {
				so = append(so, ratelimit.WithObserver((&answers{}).observer()))
			}
			l := mustNew(t, ratelimit.NewMemoryStore(so...), c.policies...)
			opts := append([]ratelimit.Option{ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { t.Error(err) })}, c.opts...)
			h := ratelimit.Middleware(l, opts...)(okHandler)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = "203.0.113.7:1234"
			key := "ip:203.0.113.7"
			if c.apiKey != "" {
				r.Header.Set("X-API-Key", c.apiKey)
				key = "hdr:x-api-key:" + c.apiKey
			}
			w := &discardWriter{h: http.Header{}}
			h.ServeHTTP(w, r) // the first request: a denying policy denies from the next one
			total := testing.AllocsPerRun(200, func() {
				clear(w.h)
				h.ServeHTTP(w, r)
			})
			store := testing.AllocsPerRun(200, func() { _, _ = l.Allow(context.Background(), key) })
			if got := total - store; got > c.want {
				t.Errorf("the middleware allocates %v times per request (%v in all, %v in the store), want at most %v", got, total, store, c.want)
			}
		})
	}
}

// TestKeyByIPFollowsTheGuard: KeyByIP in a guard's key function resolves the client as the
// guard does, whether or not the guard's client-IP options differ from its defaults.
func TestKeyByIPFollowsTheGuard(t *testing.T) {
	for _, c := range []struct {
		opts []ratelimit.Option
		want string
	}{
		{nil, "ip:2001:db8:1:2::/64"},
		{[]ratelimit.Option{ratelimit.IPv6Prefix(128)}, "ip:2001:db8:1:2:3:4:5:6"},
		{[]ratelimit.Option{ratelimit.IPv6Prefix(48)}, "ip:2001:db8:1::/48"},
	} {
		var got string
		key := func(r ratelimit.Request) (string, error) {
			k, err := ratelimit.KeyByIP()(r)
			got = k
			return k, err
		}
		l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 10, Window: time.Minute})
		h := ratelimit.Middleware(l, append([]ratelimit.Option{ratelimit.WithKey(key)}, c.opts...)...)(okHandler)
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "[2001:db8:1:2:3:4:5:6]:443"
		h.ServeHTTP(httptest.NewRecorder(), r)
		if got != c.want {
			t.Errorf("with %d options: KeyByIP gave %q, want %q", len(c.opts), got, c.want)
		}
	}
}
