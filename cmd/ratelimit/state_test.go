package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// stateYAML has a rule of each kind of key. Every window is an hour or a day, so that what
// the tests send is still counted, on the Redis server's clock, when the command looks.
const stateYAML = `version: s1
rules:
  - name: api
    match: {pattern: "/api/"}
    key: api_key
    policies:
      - {name: per-hour, algorithm: sliding_window_log, limit: 5, window: 1h}
      - {name: per-day, algorithm: token_bucket, limit: 100, window: 24h, burst: 10}
  - name: search
    match: {pattern: "GET /search/{q}"}
    key: [ip, route]
    policies:
      - {name: per-hour, limit: 3, window: 1h}
  - name: account
    match: {pattern: "/account/"}
    key: [user, "header:X-Tenant"]
    policies:
      - {name: per-hour, limit: 2, window: 1h, shadow: false}
`

// stateRules returns the rules of stateYAML, as the application parses them.
func stateRules(t *testing.T) []rules.Rule {
	t.Helper()
	set, err := rules.Parse("limits.yaml", []byte(stateYAML), rules.WithUserKey(appUserKey{}))
	if err != nil {
		t.Fatal(err)
	}
	return set.Rules()
}

// app is the application: the rules of stateYAML, each through the core's middleware with its
// key function, over the Redis store with prefix.
func app(t *testing.T, client redis.UniversalClient, prefix string, opts ...ratelimit.RedisOption) http.Handler {
	t.Helper()
	mux := http.NewServeMux()
	for _, rule := range stateRules(t) {
		l, err := ratelimit.New(ratelimit.NewRedisStore(client, append([]ratelimit.RedisOption{ratelimit.WithPrefix(prefix)}, opts...)...), rule.Policies...)
		if err != nil {
			t.Fatal(err)
		}
		ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
		// A guard's timeout of a minute, not the default 100 ms, which a busy machine misses:
		// the request would be let through unlimited (fail-open).
		mux.Handle(rule.Pattern, ratelimit.Middleware(l, ratelimit.WithKey(rule.KeyFunc()), ratelimit.WithTimeout(time.Minute))(ok))
	}
	// The authentication in front of the limiter: the user's id in the context.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("X-Test-User"); id != "" {
			r = r.WithContext(context.WithValue(r.Context(), appUserKey{}, id))
		}
		mux.ServeHTTP(w, r)
	})
}

// apiRequest is a request to the rule api with the API key abc.
func apiRequest() *http.Request {
	r := httptest.NewRequest("GET", "/api/items", nil)
	r.Header.Set("X-API-Key", "abc")
	return r
}

// send sends n requests to h, each made by req, and returns the status of the last.
func send(h http.Handler, n int, req func() *http.Request) int {
	var code int
	for range n {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req())
		code = w.Code
	}
	return code
}

var (
	duration = regexp.MustCompile(`\b\d[\d.]*(h|ms|m|s|µs)[\d.hmsµ]*\b`)
	blanks   = regexp.MustCompile(`[ \t]+`)
)

// timeless returns out with every duration written D and every run of blanks one space: what
// does not change from one run of the command to the next while time passes.
func timeless(out string) string {
	return blanks.ReplaceAllString(duration.ReplaceAllString(out, "D"), " ")
}

// row checks that out has the row of a policy with the given remaining and next request.
func row(t *testing.T, out, policy, limit, remaining, next string) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(policy) + `\s+\S+\s+` + regexp.QuoteMeta(limit) + `\s+` + remaining + `\s+\S+\s+` + regexp.QuoteMeta(next))
	if !re.MatchString(out) {
		t.Errorf("no row %s | %s | %s remaining | %s in:\n%s", policy, limit, remaining, next, out)
	}
}

// TestInspectReset: after traffic through the application's middleware, inspect shows what
// each identity has left (given as the identity or as the parts of its key, the rules from
// Redis or from a file), charging nothing; reset forgets it, and the application sees it.
func TestInspectReset(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient, addr string) {
		key, prefix := redistest.Prefix(t)+"rules", redistest.Prefix(t)
		file := write(t, "limits.yaml", stateYAML)[0]
		cli(t, "push", "-wait", "0", "-redis", addr, "-key", key, file).want(t, 0, "version s1", "")
		h := app(t, client, prefix)
		flags := []string{"-redis", addr, "-key", key, "-prefix", prefix}
		inspect := func(args ...string) result { return cli(t, append(append([]string{"inspect"}, flags...), args...)...) }

		// api: 3 requests with the API key abc.
		if code := send(h, 3, apiRequest); code != http.StatusOK {
			t.Fatalf("api: status %d; want 200", code)
		}
		byIdentity := inspect("-rule", "api", "hdr:x-api-key:abc")
		byIdentity.want(t, 0, "rule      api (Redis key "+key+", version s1)\nkey       api_key\nidentity  hdr:x-api-key:abc\ncost      1 a request\nnext      allowed", "")
		row(t, byIdentity.stdout, "per-hour", "5 per 1h", "2", "allowed")
		row(t, byIdentity.stdout, "per-day", "100 per 24h, burst 10", "7", "allowed")
		byParts := inspect("-rule", "api", "-api-key", "abc")
		if timeless(byParts.stdout) != timeless(byIdentity.stdout) {
			t.Errorf("-api-key abc shows\n%s\nthe identity hdr:x-api-key:abc\n%s", byParts.stdout, byIdentity.stdout)
		}
		fromFile := inspect("-rule", "api", "-file", file, "-header", "X-API-Key: abc")
		if want := strings.Replace(byIdentity.stdout, "Redis key "+key, "file "+file, 1); timeless(fromFile.stdout) != timeless(want) {
			t.Errorf("-file shows\n%s\nwant\n%s", fromFile.stdout, want)
		}
		row(t, inspect("-rule", "api", "hdr:x-api-key:abc").stdout, "per-hour", "5 per 1h", "2", "allowed") // inspect charged nothing

		// search: 3 requests from 192.0.2.1 use up the route's quota; an IPv6 client is keyed
		// by its /64.
		if code := send(h, 4, func() *http.Request {
			r := httptest.NewRequest("GET", "/search/shoes", nil)
			r.RemoteAddr = "192.0.2.1:5555"
			return r
		}); code != http.StatusTooManyRequests {
			t.Fatalf("search: status %d after 4 requests; want 429", code)
		}
		search := inspect("-rule", "search", "-ip", "192.0.2.1", "-route", "GET /search/{q}")
		search.want(t, 0, "identity  12:ip:192.0.2.1|17:route:/search/{q}\n", "")
		search.want(t, 0, "next      denied, retry in ", "")
		row(t, search.stdout, "per-hour", "3 per 1h", "0", "denied, retry in")
		send(h, 1, func() *http.Request {
			r := httptest.NewRequest("GET", "/search/boots", nil)
			r.RemoteAddr = "[2001:db8:1:2::5]:5555"
			return r
		})
		row(t, inspect("-rule", "search", "-ip", "2001:db8:1:2::77", "-route", "/search/{q}").stdout, "per-hour", "3 per 1h", "2", "allowed")

		// account: the user's id, whatever the application's key, and a header.
		send(h, 1, func() *http.Request {
			r := httptest.NewRequest("POST", "/account/settings", nil)
			r.Header.Set("X-Test-User", "42")
			r.Header.Set("X-Tenant", "acme")
			return r
		})
		account := inspect("-rule", "account", "-user", "42", "-header", "x-tenant: acme")
		account.want(t, 0, "identity  7:user:42|17:hdr:x-tenant:acme\n", "")
		row(t, account.stdout, "per-hour", "2 per 1h", "1", "allowed")

		// reset forgets the api key's use, and the application sees it whole again.
		reset := cli(t, append(append([]string{"reset"}, flags...), "-rule", "api", "-api-key", "abc")...)
		reset.want(t, 0, "identity  hdr:x-api-key:abc\n", "")
		api := stateRules(t)[0]
		for i, want := range []string{"per-hour 2 of 5", "per-day 7 of 10"} {
			want += " " + ratelimit.StorageKey(prefix, "hdr:x-api-key:abc", api.Policies[i], false) + "\n"
			if !strings.Contains(timeless(reset.stdout), want) {
				t.Errorf("reset printed\n%s\nwant the line %q", reset.stdout, want)
			}
		}
		after := inspect("-rule", "api", "hdr:x-api-key:abc")
		row(t, after.stdout, "per-hour", "5 per 1h", "5", "allowed")
		row(t, after.stdout, "per-day", "100 per 24h, burst 10", "10", "allowed")
		row(t, inspect("-rule", "search", "12:ip:192.0.2.1|17:route:/search/{q}").stdout, "per-hour", "3 per 1h", "0", "denied") // another identity: kept
	})
}

// TestInspectResetCompact: an application whose store keeps compact state is inspected and
// reset with -compact, which reads and prints its keys (digests); without it the command reads
// readable keys, which hold nothing.
func TestInspectResetCompact(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient, addr string) {
		key, prefix := redistest.Prefix(t)+"rules", redistest.Prefix(t)
		file := write(t, "limits.yaml", stateYAML)[0]
		cli(t, "push", "-wait", "0", "-redis", addr, "-key", key, file).want(t, 0, "version s1", "")
		h := app(t, client, prefix, ratelimit.WithCompactState())
		flags := []string{"-redis", addr, "-key", key, "-prefix", prefix}
		state := func(cmd string, args ...string) result {
			return cli(t, append(append([]string{cmd}, flags...), args...)...)
		}
		if code := send(h, 3, apiRequest); code != http.StatusOK {
			t.Fatalf("api: status %d; want 200", code)
		}
		api := stateRules(t)[0]
		compact := state("inspect", "-compact", "-rule", "api", "-api-key", "abc")
		row(t, compact.stdout, "per-hour", "5 per 1h", "2", "allowed")
		if k := ratelimit.StorageKey(prefix, "hdr:x-api-key:abc", api.Policies[0], true); !strings.Contains(compact.stdout, k) {
			t.Errorf("inspect -compact printed\n%s\nwant the key %s", compact.stdout, k)
		}
		row(t, state("inspect", "-rule", "api", "-api-key", "abc").stdout, "per-hour", "5 per 1h", "5", "allowed")

		reset := state("reset", "-compact", "-rule", "api", "-api-key", "abc")
		want := "per-hour 2 of 5 " + ratelimit.StorageKey(prefix, "hdr:x-api-key:abc", api.Policies[0], true) + "\n"
		if !strings.Contains(timeless(reset.stdout), want) {
			t.Errorf("reset -compact printed\n%s\nwant the line %q", reset.stdout, want)
		}
		row(t, state("inspect", "-compact", "-rule", "api", "-api-key", "abc").stdout, "per-hour", "5 per 1h", "5", "allowed")
	})
}

// TestInspectResetHash: an application whose store keeps hash state is inspected and reset
// with -hash, which reads its hashes and names each policy's field (the sliding log keeps its
// own key); without it the command reads a key per policy, where the token bucket holds
// nothing. With -compact too, the hash is named by its hash tag.
func TestInspectResetHash(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient, addr string) {
		key, prefix := redistest.Prefix(t)+"rules", redistest.Prefix(t)
		file := write(t, "limits.yaml", stateYAML)[0]
		cli(t, "push", "-wait", "0", "-redis", addr, "-key", key, file).want(t, 0, "version s1", "")
		api := stateRules(t)[0]
		id := "hdr:x-api-key:abc"
		bucketField := ratelimit.StorageKey(prefix, id, api.Policies[1], false)
		bucketField = bucketField[strings.LastIndex(bucketField, "}:")+2:]
		for _, tc := range []struct {
			name   string
			flags  []string
			opts   []ratelimit.RedisOption
			bucket string // how the token bucket's state is named
		}{
			{"readable", []string{"-hash"}, []ratelimit.RedisOption{ratelimit.WithHashState()},
				prefix + "{" + id + "} field " + bucketField},
			{"compact", []string{"-hash", "-compact"}, []ratelimit.RedisOption{ratelimit.WithHashState(), ratelimit.WithCompactState()},
				"the hash " + ratelimit.StorageKey(prefix, id, api.Policies[1], true)[:6] + "… field " + bucketField},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h := app(t, client, prefix, tc.opts...)
				if code := send(h, 3, apiRequest); code != http.StatusOK {
					t.Fatalf("api: status %d; want 200", code)
				}
				flags := []string{"-redis", addr, "-key", key, "-prefix", prefix}
				state := func(cmd string, args ...string) result {
					return cli(t, append(append(append([]string{cmd}, flags...), tc.flags...), args...)...)
				}
				seen := state("inspect", "-rule", "api", "-api-key", "abc")
				row(t, seen.stdout, "per-hour", "5 per 1h", "2", "allowed")
				row(t, seen.stdout, "per-day", "100 per 24h, burst 10", "7", "allowed")
				if !strings.Contains(seen.stdout, tc.bucket) {
					t.Errorf("inspect %v printed\n%s\nwant the token bucket named %q", tc.flags, seen.stdout, tc.bucket)
				}
				plain := cli(t, append(append([]string{"inspect"}, flags...), append(tc.flags[1:], "-rule", "api", "-api-key", "abc")...)...)
				row(t, plain.stdout, "per-day", "100 per 24h, burst 10", "10", "allowed")

				reset := state("reset", "-rule", "api", "-api-key", "abc")
				if want := "per-day 7 of 10 " + tc.bucket + "\n"; !strings.Contains(timeless(reset.stdout), want) {
					t.Errorf("reset %v printed\n%s\nwant the line %q", tc.flags, reset.stdout, want)
				}
				after := state("inspect", "-rule", "api", "-api-key", "abc")
				row(t, after.stdout, "per-hour", "5 per 1h", "5", "allowed")
				row(t, after.stdout, "per-day", "100 per 24h, burst 10", "10", "allowed")
			})
		}
	})
}

// TestInspectErrors: what inspect and reset refuse, and how.
func TestInspectErrors(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	file := write(t, "limits.yaml", stateYAML)[0]
	if _, err := rules.Push(t.Context(), client, key, "limits.yaml", []byte(stateYAML), rules.WithUserKey(appUserKey{})); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"-rule", "nope", "x"}, 1, `ratelimit inspect: no rule "nope" in version s1; its rules are api, search, account`},
		{[]string{"-rule", "search", "-ip", "192.0.2.1"}, 2, "rule search is keyed by [ip route]: give -route (or the IDENTITY)"},
		{[]string{"-rule", "account", "-user", "42"}, 2, `rule account is keyed by [user header:X-Tenant]: give -header "X-Tenant: value"`},
		{[]string{"-rule", "api", "-api-key", "abc", "-ip", "192.0.2.1"}, 2, "rule api is keyed by [api_key], not by -ip"},
		{[]string{"-rule", "api", "-api-key", "abc", "-header", "X-Tenant: acme"}, 2, `rule api is keyed by [api_key], not by -header "X-Tenant: value"`},
		{[]string{"-rule", "search", "-ip", "192.0.2.1:80", "-route", "/x"}, 2, `-ip "192.0.2.1:80" is not an IP address`},
		// A rule keys by its own pattern, whatever -route said: the identity of another route
		// was the rule's, silently (found by a review).
		{[]string{"-rule", "search", "-ip", "192.0.2.1", "-route", "/other/{q}"}, 2, `-route "/other/{q}" is not the route of rule search, which keys every request by its own pattern "GET /search/{q}": give -route "/search/{q}"`},
		{[]string{"-rule", "search", "-ip", "192.0.2.1", "-route", "/search/shoes"}, 2, `-route "/search/shoes" is not the route of rule search, which keys every request by its own pattern "GET /search/{q}": give -route "/search/{q}"`},
		{[]string{"-rule", "api", "-api-key", "a,b"}, 2, "rule api makes no identity of these parts: ratelimit: header X-Api-Key has a comma"},
		{[]string{"-rule", "api", "-key", "nothing:here", "x"}, 1, `no rules are stored at Redis key "nothing:here"`},
		{[]string{"-rule", "api", "-file", file + ".missing", "x"}, 1, "limits.yaml.missing: no such file or directory"},
	} {
		for _, cmd := range []string{"inspect", "reset"} {
			args := append([]string{cmd, "-redis", addr, "-key", key}, tc.args...)
			r := cli(t, args...)
			want := strings.Replace(tc.inStderr, "ratelimit inspect:", "ratelimit "+cmd+":", 1)
			r.want(t, tc.code, "", want)
			if n := strings.Count(r.stderr, "\n"); n != 1 {
				t.Errorf("ratelimit %q: %d lines on stderr; want one", args, n)
			}
		}
	}
}

// inspect of a rule whose requests cost more than 1 says also whether a request of that cost
// would be allowed: "next allowed (a request of cost 1)" alone read as the application's
// answer, where it refuses a request of cost 3 with 1 left.
func TestInspectRuleCost(t *testing.T) {
	client, addr := redistest.Standalone(t), redistest.Addr(t)
	prefix := redistest.Prefix(t)
	const doc = `version: c1
rules:
  - name: export
    key: api_key
    cost: 3
    policies:
      - {name: per-hour, limit: 4, window: 1h}
      - {name: per-day, limit: 100, window: 24h}
`
	file := write(t, "limits.yaml", doc)[0]
	l := firstRuleLimiter(t, client, prefix, doc)
	const identity = "hdr:x-api-key:abc"
	if d, err := l.AllowN(t.Context(), identity, 3); err != nil || !d.Allowed {
		t.Fatalf("the first export: %+v, %v", d, err)
	}
	cli(t, "inspect", "-redis", addr, "-prefix", prefix, "-file", file, "-rule", "export", identity).want(t, 0,
		"next      allowed (a request of cost 1)\n          denied now (a request of the rule's cost, 3: per-hour has 1 left)\n", "")
}

// firstRuleLimiter returns the limiter of the first rule of doc (limits.yaml) on the Redis of
// client, under prefix: the one the rule's engine would check, for a test to charge.
func firstRuleLimiter(t *testing.T, client redis.UniversalClient, prefix, doc string) *ratelimit.Limiter {
	t.Helper()
	set, err := rules.Parse("limits.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ratelimit.New(ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix)), set.Rules()[0].Policies...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
