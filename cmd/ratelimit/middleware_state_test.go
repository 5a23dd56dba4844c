package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// middlewarePolicies are the application's middleware limits in the tests, and policyFlags
// the same as inspect and reset take them.
var (
	middlewarePolicies = []ratelimit.Policy{
		{Name: "burst", Limit: 3, Window: time.Minute, Algorithm: algorithms.SlidingLog{}},
		{Limit: 100, Window: time.Hour}, // unnamed: GCRA, named as New names it
	}
	middlewarePolicyFlags = []string{"-policy", "name=burst,limit=3,window=1m,algorithm=sliding_window_log", "-policy", "rate=100/h"}
)

// middlewareRoundTrip is the round trip of a middleware's limit: it drives the core's
// middleware, keyed by API key, over client with a prefix of the test's own until it denies;
// then inspect, with connect (the flags that reach the same Redis), must show the limit used
// up and the storage keys the middleware wrote; reset must delete them, and the middleware
// allow the next request.
func middlewareRoundTrip(t *testing.T, client redis.UniversalClient, connect ...string) {
	t.Helper()
	prefix := redistest.Prefix(t)
	l, err := ratelimit.New(ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix)), middlewarePolicies...)
	if err != nil {
		t.Fatal(err)
	}
	// A guard's timeout of a minute: the default 100 ms, missed on a busy machine, let a
	// request through unlimited (fail-open) and failed the round trip.
	h := ratelimit.Middleware(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.WithTimeout(time.Minute))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	request := func() *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", "k1")
		return r
	}
	if code := send(h, 3, request); code != http.StatusOK {
		t.Fatalf("the 3rd request in a minute: %d, want 200", code)
	}
	if code := send(h, 1, request); code != http.StatusTooManyRequests {
		t.Fatalf("the 4th request in a minute: %d, want 429", code)
	}
	const identity = "hdr:x-api-key:k1"
	// The application answers this identity's denial itself (the denial cache, once its
	// subscription to refunds and resets is made), until the Retry-After, up to a minute.
	until(t, "a denial answered by the denial cache", func() bool {
		d, err := l.Allow(t.Context(), identity)
		return err == nil && !d.Allowed && d.Source == observe.SourceDenialCache
	})
	keys := make([]string, len(middlewarePolicies))
	for i, p := range middlewarePolicies {
		keys[i] = ratelimit.StorageKey(prefix, identity, p, false)
	}
	exist := func() int64 {
		n, err := client.Exists(t.Context(), keys...).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := exist(); n != int64(len(keys)) {
		t.Fatalf("%d of the storage keys %q exist after the traffic; want all", n, keys)
	}

	flags := slices.Concat(connect, []string{"-prefix", prefix, "-keyed-by", "api_key", "-api-key", "k1"}, middlewarePolicyFlags)
	inspect := cli(t, append([]string{"inspect"}, flags...)...)
	inspect.want(t, 0, "rule      middleware (the command line's -policy)\nkey       api_key\nidentity  "+identity+"\n", "")
	row(t, inspect.stdout, "burst", "3 per 1m", "0", "denied")
	row(t, inspect.stdout, "gcra-100-per-1h", "100 per 1h", "97", "allowed")
	for _, k := range keys {
		if !strings.Contains(inspect.stdout, k) {
			t.Errorf("inspect does not name the storage key %s:\n%s", k, inspect.stdout)
		}
	}
	reset := cli(t, append([]string{"reset"}, flags...)...)
	reset.want(t, 0, "identity  "+identity+"\n", "")
	if !strings.Contains(timeless(reset.stdout), "burst 0 of 3 "+keys[0]+"\n") {
		t.Errorf("reset does not say it reset burst, 0 of 3 remaining, at %s:\n%s", keys[0], reset.stdout)
	}
	if n := exist(); n != 0 {
		t.Errorf("%d of the storage keys %q exist after reset; want none", n, keys)
	}
	// The reset is announced to the application, which stops answering the denial itself.
	until(t, "the middleware to admit the identity after the reset", func() bool {
		return send(h, 1, request) == http.StatusOK
	})
}

// until polls cond until it holds, failing the test after 10 s (well under the minute the
// denial would otherwise last).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}

// inspect and reset work for a middleware's limits, with no rules file: the policies given
// on the command line as the application has them find the state the middleware keeps.
func TestInspectResetMiddleware(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient, addr string) {
		middlewareRoundTrip(t, client, "-redis", addr)
	})
	addr := redistest.Addr(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-policy", "limit=x", "1.2.3.4"}, `limit "x" is not a whole number`},
		{[]string{"-policy", "limit=5,window=1m,cost=2", "1.2.3.4"}, `"cost=2" is not name=, rate=, limit=, window=, period=, burst=, algorithm= or shadow=`},
		{[]string{"-policy", "limit=5,window=1m,algorithm=nope", "1.2.3.4"}, `unknown algorithm "nope"`},
		{[]string{"-policy", "limit=5,window=1m", "-keyed-by", "session", "1.2.3.4"}, `unknown key "session"`},
		{[]string{"-policy", "limit=5,window=1m", "-rule", "api", "1.2.3.4"}, "give -rule or -policy, not both"},
		// Flags that belong to the other way of naming limits are refused, not ignored.
		{[]string{"-policy", "limit=5,window=1m", "-file", "rules.yaml", "1.2.3.4"}, "-file goes with -rule"},
		{[]string{"-rule", "api", "-keyed-by", "user", "1.2.3.4"}, "-keyed-by goes with -policy"},
	} {
		cli(t, append([]string{"inspect", "-redis", addr}, tc.args...)...).want(t, 2, "", tc.want)
	}
}

// A middleware's shadow policy is given to inspect as the application has it (shadow=true): a
// spent shadow policy is shown as the shadow it is, and the next request as the application
// decides it, allowed (without shadow=, inspect could only hold it enforced, and said the
// next request was denied).
func TestInspectMiddlewareShadow(t *testing.T) {
	client, addr := redistest.Standalone(t), redistest.Addr(t)
	prefix := redistest.Prefix(t)
	l, err := ratelimit.New(ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix)),
		ratelimit.Policy{Limit: 100, Window: time.Hour},
		ratelimit.Policy{Name: "trial", Limit: 1, Window: time.Hour, Shadow: true})
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	request := func() *http.Request { return httptest.NewRequest("GET", "/", nil) } // from 192.0.2.1
	if code := send(h, 2, request); code != http.StatusOK {
		t.Fatalf("2 requests under 100 an hour and a shadow 1 an hour: %d, want 200", code)
	}
	inspect := cli(t, "inspect", "-redis", addr, "-prefix", prefix, "-policy", "rate=100/h", "-policy", "name=trial,limit=1,window=1h,shadow=true", "-ip", "192.0.2.1")
	inspect.want(t, 0, "next      allowed", "")
	row(t, inspect.stdout, "trial", "1 per 1h", "0", "denied, retry in")
	if !strings.Contains(inspect.stdout, "(shadow)") {
		t.Errorf("inspect does not say trial is a shadow policy:\n%s", inspect.stdout)
	}
	cli(t, "inspect", "-redis", addr, "-policy", "limit=5,window=1m,shadow=maybe", "1.2.3.4").want(t, 2, "", `shadow "maybe" is not true or false`)
}
