package ratelimit_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// The HTTP spec table: each case is a limiter's policies, the middleware's options, and
// requests sent in order against a fake clock, with the response each must get. Every case
// runs against every engine (memory, Redis, Redis Cluster).

type specCase struct {
	name     string
	policies []ratelimit.Policy
	opts     func(run *specRun) []ratelimit.Option
	steps    []specStep
}

// specStep is one request — GET / from 192.0.2.1:1234 unless req changes it — and the
// response it must get.
type specStep struct {
	advance time.Duration         // move the clock first
	req     func(r *http.Request) // change the request
	answer  int                   // the handler's status; 0 means 200

	status           int
	handled          bool              // the handler ran
	limit, remaining int64             // X-RateLimit-Limit and -Remaining; limit 0: no X-RateLimit headers
	reset            time.Duration     // X-RateLimit-Reset, as time after t0
	retry            string            // Retry-After; "" when absent
	wait             time.Duration     // the shaping wait the request made
	headers          map[string]string // more headers to check; "" when absent
	body             string            // a part of the body
	reported         string            // a part of the error the error handler was told; "" when none
}

// specRun is the state of one case's run, for options that need it.
type specRun struct {
	clock   *fakeClock
	waited  time.Duration
	waitErr error
	errs    []error
}

func (r *specRun) wait(ctx context.Context, d time.Duration) error {
	r.waited = d
	return r.waitErr
}

// fixed is a fixed-window policy, whose headers are easy to read: the window ends at a whole
// multiple of its length after t0.
func fixed(limit int64, window time.Duration, name string) ratelimit.Policy {
	return ratelimit.Policy{Name: name, Limit: limit, Window: window, Algorithm: algorithms.FixedWindow{}}
}

func from(addr string) func(*http.Request) {
	return func(r *http.Request) { r.RemoteAddr = addr }
}

func withHeader(kv ...string) func(*http.Request) {
	return func(r *http.Request) {
		for i := 0; i < len(kv); i += 2 {
			r.Header.Add(kv[i], kv[i+1])
		}
	}
}

func toPath(p string) func(*http.Request) {
	return func(r *http.Request) { r.URL.Path = p }
}

func opts(o ...ratelimit.Option) func(*specRun) []ratelimit.Option {
	return func(*specRun) []ratelimit.Option { return o }
}

// costHeader is a cost function: the X-Cost header, 1 when absent.
func costHeader(r ratelimit.Request) int64 {
	if n, err := strconv.ParseInt(r.Header("X-Cost"), 10, 64); err == nil {
		return n
	}
	return 1
}

const plainText = "text/plain; charset=utf-8"

var specTable = []specCase{
	{
		name:     "headers on allowed and denied responses",
		policies: []ratelimit.Policy{fixed(3, time.Minute, "minute")},
		steps: []specStep{
			{status: 200, handled: true, limit: 3, remaining: 2, reset: time.Minute},
			{status: 200, handled: true, limit: 3, remaining: 1, reset: time.Minute},
			{status: 200, handled: true, limit: 3, remaining: 0, reset: time.Minute},
			{status: 429, limit: 3, remaining: 0, reset: time.Minute, retry: "60", body: "Too Many Requests: Rate limit exceeded. Retry in 60 seconds.",
				headers: map[string]string{"Content-Type": plainText, "X-Content-Type-Options": "nosniff"}},
			{advance: time.Minute, status: 200, handled: true, limit: 3, remaining: 2, reset: 2 * time.Minute},
		},
	},
	{
		name:     "Retry-After rounds up and is true",
		policies: []ratelimit.Policy{fixed(1, time.Minute, "minute")},
		steps: []specStep{
			{advance: 500 * time.Millisecond, status: 200, handled: true, limit: 1, remaining: 0, reset: time.Minute},
			{status: 429, limit: 1, reset: time.Minute, retry: "60"},                           // 59.5 s
			{advance: 59 * time.Second, status: 429, limit: 1, reset: time.Minute, retry: "1"}, // 0.5 s: at least 1
			{advance: time.Second, status: 200, handled: true, limit: 1, remaining: 0, reset: 2 * time.Minute},
		},
	},
	{
		name:     "Retry-After of GCRA, rounded up",
		policies: []ratelimit.Policy{ratelimit.Policy{Name: "gcra", Limit: 2, Window: 3 * time.Second}}, // one every 1.5 s
		steps: []specStep{
			{status: 200, handled: true, limit: 2, remaining: 1, reset: 2 * time.Second}, // reset in 1.5 s
			{status: 200, handled: true, limit: 2, remaining: 0, reset: 3 * time.Second},
			{status: 429, limit: 2, remaining: 0, reset: 3 * time.Second, retry: "2"}, // 1.5 s
			{advance: time.Second, status: 429, limit: 2, reset: 3 * time.Second, retry: "1"},
			{advance: time.Second, status: 200, handled: true, limit: 2, remaining: 0, reset: 5 * time.Second},
		},
	},
	{
		name:     "Retry-After of a sliding counter, to the microsecond",
		policies: []ratelimit.Policy{ratelimit.Policy{Name: "counter", Limit: 4, Window: 4 * time.Second, Algorithm: algorithms.SlidingCounter{}}},
		opts:     opts(ratelimit.WithCost(costHeader)),
		steps: []specStep{
			{req: withHeader("X-Cost", "3"), status: 200, handled: true, limit: 4, remaining: 1, reset: 8 * time.Second},
			{req: withHeader("X-Cost", "2"), status: 429, limit: 4, remaining: 1, reset: 8 * time.Second, retry: "6"}, // 5.333334 s
			{advance: 5 * time.Second, req: withHeader("X-Cost", "2"), status: 429, limit: 4, remaining: 1, reset: 8 * time.Second, retry: "1"},
			{advance: time.Second, req: withHeader("X-Cost", "2"), status: 200, handled: true, limit: 4, remaining: 0, reset: 12 * time.Second},
		},
	},
	{
		name:     "the binding policy: least remaining, else the longest wait",
		policies: []ratelimit.Policy{fixed(1, time.Second, "second"), fixed(2, time.Minute, "minute")},
		steps: []specStep{
			{status: 200, handled: true, limit: 1, remaining: 0, reset: time.Second},             // second: 0 left, minute: 1
			{status: 429, limit: 1, remaining: 0, reset: time.Second, retry: "1"},                // only second denies
			{advance: time.Second, status: 200, handled: true, limit: 1, reset: 2 * time.Second}, // both 0 left: the first
			{status: 429, limit: 2, remaining: 0, reset: time.Minute, retry: "59"},               // both deny: minute waits longer
		},
	},
	{
		name:     "IETF draft fields",
		policies: []ratelimit.Policy{fixed(1, time.Second, "second"), fixed(2, time.Minute, "minute"), ratelimit.Policy{Limit: 100, Window: time.Hour}},
		opts:     opts(ratelimit.WithHeaders(ratelimit.XRateLimitHeaders | ratelimit.IETFDraftHeaders)),
		steps: []specStep{
			{status: 200, handled: true, limit: 1, remaining: 0, reset: time.Second, headers: map[string]string{
				"RateLimit-Policy": `"second";q=1;w=1, "minute";q=2;w=60, "gcra-100-per-1h";q=100;w=3600`,
				"RateLimit":        `"second";r=0;t=1`,
			}},
			{advance: time.Second, status: 200, handled: true, limit: 1, remaining: 0, reset: 2 * time.Second, headers: map[string]string{
				"RateLimit": `"second";r=0;t=1`,
			}},
			{status: 429, limit: 2, remaining: 0, reset: time.Minute, retry: "59", headers: map[string]string{
				"RateLimit-Policy": `"second";q=1;w=1, "minute";q=2;w=60, "gcra-100-per-1h";q=100;w=3600`,
				"RateLimit":        `"minute";r=0;t=59`,
			}},
		},
	},
	{
		name:     "IETF draft fields only",
		policies: []ratelimit.Policy{fixed(1, time.Minute, "minute")},
		opts:     opts(ratelimit.WithHeaders(ratelimit.IETFDraftHeaders)),
		steps: []specStep{
			{status: 200, handled: true, headers: map[string]string{"RateLimit": `"minute";r=0;t=60`, "RateLimit-Policy": `"minute";q=1;w=60`}},
			{status: 429, retry: "60", headers: map[string]string{"RateLimit": `"minute";r=0;t=60`}},
		},
	},
	{
		name:     "no rate-limit headers, but Retry-After",
		policies: []ratelimit.Policy{fixed(1, time.Minute, "minute")},
		opts:     opts(ratelimit.WithHeaders()),
		steps: []specStep{
			{status: 200, handled: true, headers: map[string]string{"RateLimit": "", "RateLimit-Policy": ""}},
			{status: 429, retry: "60"},
		},
	},
	{
		name:     "problem+json lists the violated policies",
		policies: []ratelimit.Policy{fixed(1, time.Second, "second"), fixed(1, time.Minute, "minute"), fixed(10, time.Hour, "hour")},
		opts:     opts(ratelimit.WithProblemJSON()),
		steps: []specStep{
			{status: 200, handled: true, limit: 1, remaining: 0, reset: time.Second},
			{status: 429, limit: 1, remaining: 0, reset: time.Minute, retry: "60",
				headers: map[string]string{"Content-Type": "application/problem+json"},
				body: `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",` +
					`"title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,` +
					`"detail":"Rate limit exceeded. Retry in 60 seconds.","violated-policies":["second","minute"]}`},
		},
	},
	{
		name:     "cost: above capacity is never admitted, 0 only reads, negative is a bad request",
		policies: []ratelimit.Policy{fixed(3, time.Minute, "minute")},
		opts:     opts(ratelimit.WithCost(costHeader)),
		steps: []specStep{
			{req: withHeader("X-Cost", "4"), status: 429, limit: 3, remaining: 3, reset: 0, retry: "",
				body: "Too Many Requests: This request costs more than the rate limit allows; it cannot be admitted."},
			{req: withHeader("X-Cost", "0"), status: 200, handled: true, limit: 3, remaining: 3},
			{req: withHeader("X-Cost", "2"), status: 200, handled: true, limit: 3, remaining: 1, reset: time.Minute},
			{req: withHeader("X-Cost", "2"), status: 429, limit: 3, remaining: 1, reset: time.Minute, retry: "60"},
			// A negative cost is the request's fault, not the store's: never failed open.
			{req: withHeader("X-Cost", "-1"), status: 400, body: "Bad Request: the request's cost is invalid.",
				headers:  map[string]string{"Content-Type": plainText, "X-Content-Type-Options": "nosniff"},
				reported: "ratelimit: cost: the cost function returned -1; a cost cannot be negative"},
			{req: withHeader("X-Cost", "1"), status: 200, handled: true, limit: 3, remaining: 0, reset: time.Minute}, // it charged nothing
		},
	},
	{
		name:     "skipped requests are neither checked nor charged",
		policies: []ratelimit.Policy{fixed(1, time.Minute, "minute")},
		opts:     opts(ratelimit.WithSkip(func(r ratelimit.Request) bool { return r.Path() == "/healthz" })),
		steps: []specStep{
			{req: toPath("/healthz"), status: 200, handled: true},
			{status: 200, handled: true, limit: 1, remaining: 0, reset: time.Minute},
			{status: 429, limit: 1, reset: time.Minute, retry: "60"},
			{req: toPath("/healthz"), status: 200, handled: true},
		},
	},
	{
		name:     "custom deny response",
		policies: []ratelimit.Policy{fixed(1, time.Minute, "minute")},
		opts: opts(ratelimit.WithDenyResponse(func(r ratelimit.Request, d ratelimit.Decision) (int, string, []byte) {
			return http.StatusServiceUnavailable, "application/json", []byte(`{"error":"slow down","policy":"` + d.Policy.Name + `","path":"` + r.Path() + `"}`)
		})),
		steps: []specStep{
			{status: 200, handled: true, limit: 1, reset: time.Minute},
			{status: 503, limit: 1, reset: time.Minute, retry: "60", body: `{"error":"slow down","policy":"minute","path":"/"}`,
				headers: map[string]string{"Content-Type": "application/json"}},
		},
	},
	{
		name:     "custom deny response with status 0 answers 429",
		policies: []ratelimit.Policy{fixed(1, time.Minute, "minute")},
		opts: opts(ratelimit.WithDenyResponse(func(ratelimit.Request, ratelimit.Decision) (int, string, []byte) {
			return 0, "", nil
		})),
		steps: []specStep{
			{status: 200, handled: true, limit: 1, reset: time.Minute},
			{status: 429, limit: 1, reset: time.Minute, retry: "60", headers: map[string]string{"Content-Type": ""}},
		},
	},
	{
		name:     "count by outcome: only failed logins count",
		policies: []ratelimit.Policy{fixed(2, time.Minute, "login")},
		opts:     opts(ratelimit.CountIf(func(status int) bool { return status == http.StatusUnauthorized })),
		steps: []specStep{
			{status: 200, handled: true, limit: 2, remaining: 1, reset: time.Minute}, // Remaining assumes it counts
			{status: 200, handled: true, limit: 2, remaining: 1, reset: time.Minute}, // it did not
			{answer: 401, status: 401, handled: true, limit: 2, remaining: 1, reset: time.Minute},
			{answer: 401, status: 401, handled: true, limit: 2, remaining: 0, reset: time.Minute},
			{status: 429, limit: 2, remaining: 0, reset: time.Minute, retry: "60"}, // even a good password waits
			{advance: time.Minute, status: 200, handled: true, limit: 2, remaining: 1, reset: 2 * time.Minute},
		},
	},
	{
		name:     "shaping delays the request instead of rejecting it, up to its bound",
		policies: []ratelimit.Policy{ratelimit.Policy{Name: "queue", Limit: 3, Window: 3 * time.Second, Algorithm: algorithms.LeakyBucket{Shaping: true}}},
		steps: []specStep{
			{status: 200, handled: true, limit: 3, remaining: 2, reset: time.Second},
			{status: 200, handled: true, limit: 3, remaining: 1, reset: 2 * time.Second, wait: time.Second},
			{status: 200, handled: true, limit: 3, remaining: 0, reset: 3 * time.Second, wait: 2 * time.Second},
			{status: 429, limit: 3, remaining: 0, reset: 3 * time.Second, retry: "1"}, // the queue is full
		},
	},
	{
		name:     "shaping: a client that goes away while it waits is not served",
		policies: []ratelimit.Policy{ratelimit.Policy{Name: "queue", Limit: 3, Window: 3 * time.Second, Algorithm: algorithms.LeakyBucket{Shaping: true}}},
		opts: func(run *specRun) []ratelimit.Option {
			run.waitErr = context.Canceled
			return nil
		},
		steps: []specStep{
			{status: 200, handled: true, limit: 3, remaining: 2, reset: time.Second},
			{status: 499, wait: time.Second},
		},
	},
	{
		name:     "a missing key falls back to the client IP",
		policies: []ratelimit.Policy{fixed(1, time.Minute, "minute")},
		opts:     opts(ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key"))),
		steps: []specStep{
			{status: 200, handled: true, limit: 1, reset: time.Minute},
			{status: 429, limit: 1, reset: time.Minute, retry: "60"}, // by IP: not unlimited
			{req: withHeader("X-API-Key", "k1"), status: 200, handled: true, limit: 1, reset: time.Minute},
			{req: func(r *http.Request) { from("192.0.2.2:1")(r); withHeader("X-API-Key", "k1")(r) }, status: 429, limit: 1, reset: time.Minute, retry: "60"},
			{req: from("192.0.2.2:1"), status: 200, handled: true, limit: 1, reset: time.Minute},
			// An API key that reads like an IP address does not share that address's quota.
			{req: func(r *http.Request) { from("192.0.2.3:1")(r); withHeader("X-API-Key", "192.0.2.4")(r) }, status: 200, handled: true, limit: 1, reset: time.Minute},
			{req: from("192.0.2.4:1"), status: 200, handled: true, limit: 1, reset: time.Minute},
		},
	},
	{
		name:     "a missing key can be rejected",
		policies: []ratelimit.Policy{fixed(1, time.Minute, "minute")},
		opts:     opts(ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.RejectMissingKey(http.StatusUnauthorized)),
		steps: []specStep{
			{status: 401, body: "Unauthorized: the request does not identify its client.", headers: map[string]string{"Retry-After": ""}},
			{req: withHeader("X-API-Key", "k1"), status: 200, handled: true, limit: 1, reset: time.Minute},
		},
	},
	{
		name:     "a key that cannot be read is a bad request",
		policies: []ratelimit.Policy{fixed(1, time.Minute, "minute")},
		opts:     opts(ratelimit.WithKey(ratelimit.KeyByIP(ratelimit.TrustProxies("10.0.0.0/8")))),
		steps: []specStep{
			{req: func(r *http.Request) { from("10.0.0.1:1")(r); withHeader("X-Forwarded-For", "nonsense")(r) },
				status: 400, body: "Bad Request: the request's client could not be identified.",
				reported: `ratelimit: key: client IP: X-Forwarded-For entry "nonsense" is not an IP address`},
			{req: func(r *http.Request) {
				from("10.0.0.1:1")(r)
				withHeader("X-Forwarded-For", strings.Repeat("1", 5000))(r)
			},
				status: 400, reported: "ratelimit: key: key too long: header X-Forwarded-For is 5000 bytes, more than 4096"},
			{req: func(r *http.Request) { from("10.0.0.1:1")(r); withHeader("X-Forwarded-For", "203.0.113.9")(r) },
				status: 200, handled: true, limit: 1, reset: time.Minute},
			{req: from("203.0.113.9:1"), status: 429, limit: 1, reset: time.Minute, retry: "60"}, // the same client
		},
	},
	{
		name:     "spoofed proxy headers are ignored by default",
		policies: []ratelimit.Policy{fixed(1, time.Minute, "minute")},
		steps: []specStep{
			{req: withHeader("X-Forwarded-For", "203.0.113.1"), status: 200, handled: true, limit: 1, reset: time.Minute},
			{req: withHeader("X-Forwarded-For", "203.0.113.2"), status: 429, limit: 1, reset: time.Minute, retry: "60"},
			{req: withHeader("X-Real-IP", "203.0.113.3"), status: 429, limit: 1, reset: time.Minute, retry: "60"},
			{req: withHeader("Forwarded", "for=203.0.113.4"), status: 429, limit: 1, reset: time.Minute, retry: "60"},
		},
	},
	{
		name:     "IPv6 clients are grouped by /64",
		policies: []ratelimit.Policy{fixed(1, time.Minute, "minute")},
		steps: []specStep{
			{req: from("[2001:db8:1:2::1]:443"), status: 200, handled: true, limit: 1, reset: time.Minute},
			{req: from("[2001:db8:1:2:ffff::9]:443"), status: 429, limit: 1, reset: time.Minute, retry: "60"},
			{req: from("[2001:db8:1:3::1]:443"), status: 200, handled: true, limit: 1, reset: time.Minute},
		},
	},
}

func TestMiddlewareSpec(t *testing.T) {
	for _, c := range specTable {
		t.Run(c.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
				runSpec(t, store, clock, c)
			})
		})
	}
}

func runSpec(t *testing.T, store ratelimit.Store, clock *fakeClock, c specCase) {
	t.Helper()
	l, err := ratelimit.New(store, c.policies...)
	if err != nil {
		t.Fatal(err)
	}
	run := &specRun{clock: clock}
	options := []ratelimit.Option{
		ratelimit.WithNow(clock.Now),
		ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { run.errs = append(run.errs, err) }),
		ratelimit.WithWait(run.wait),
	}
	if c.opts != nil {
		options = append(options, c.opts(run)...)
	}
	var (
		handled bool
		answer  int
	)
	h := ratelimit.Middleware(l, options...)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handled = true
		w.WriteHeader(answer)
		io.WriteString(w, "ok")
	}))
	for i, s := range c.steps {
		clock.Advance(s.advance)
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "192.0.2.1:1234"
		if s.req != nil {
			s.req(r)
		}
		handled, answer, run.waited, run.errs = false, http.StatusOK, 0, nil
		if s.answer != 0 {
			answer = s.answer
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		checkStep(t, i, s, w.Result(), handled, run)
	}
}

func checkStep(t *testing.T, i int, s specStep, resp *http.Response, handled bool, run *specRun) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != s.status {
		t.Errorf("step %d: got status %d, want %d (body %q)", i, resp.StatusCode, s.status, body)
	}
	if handled != s.handled {
		t.Errorf("step %d: handler ran: got %v, want %v", i, handled, s.handled)
	}
	want := map[string]string{"Retry-After": s.retry}
	if s.limit != 0 {
		want["X-RateLimit-Limit"] = strconv.FormatInt(s.limit, 10)
		want["X-RateLimit-Remaining"] = strconv.FormatInt(s.remaining, 10)
		want["X-RateLimit-Reset"] = strconv.FormatInt(t0.Add(s.reset).Unix(), 10)
	} else {
		want["X-RateLimit-Limit"], want["X-RateLimit-Remaining"], want["X-RateLimit-Reset"] = "", "", ""
	}
	for k, v := range s.headers {
		want[k] = v
	}
	for k, v := range want {
		if got := strings.Join(resp.Header.Values(k), "|"); got != v {
			t.Errorf("step %d: got %s %q, want %q", i, k, got, v)
		}
	}
	if !strings.Contains(string(body), s.body) {
		t.Errorf("step %d: got body %q, want it to contain %q", i, body, s.body)
	}
	if run.waited != s.wait {
		t.Errorf("step %d: got a shaping wait of %v, want %v", i, run.waited, s.wait)
	}
	switch {
	case s.reported == "" && len(run.errs) > 0:
		t.Errorf("step %d: the error handler was told %v, want nothing", i, run.errs)
	case s.reported != "" && (len(run.errs) != 1 || !strings.Contains(run.errs[0].Error(), s.reported)):
		t.Errorf("step %d: the error handler was told %v, want one error containing %q", i, run.errs, s.reported)
	}
}

// TestMiddlewareRetryAfterIsTrue holds Retry-After to the truth for every algorithm: a
// request sent Retry-After seconds later is admitted, one sent a second earlier is not.
func TestMiddlewareRetryAfterIsTrue(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, alg := range allAlgorithms {
			for _, offset := range []time.Duration{0, 1, 333 * time.Millisecond, 999999 * time.Microsecond} {
				t.Run(alg.Name()+"/"+offset.String(), func(t *testing.T) {
					clock.Set(t0.Add(offset))
					l, err := ratelimit.New(store, ratelimit.Policy{Name: "p" + strconv.Itoa(int(offset)), Limit: 3, Window: 7 * time.Second, Algorithm: alg})
					if err != nil {
						t.Fatal(err)
					}
					h := ratelimit.Middleware(l, ratelimit.WithNow(clock.Now), ratelimit.WithKey(keyOfTest(t)),
						ratelimit.WithWait(func(context.Context, time.Duration) error { return nil }))(okHandler)
					send := func() *httptest.ResponseRecorder {
						w := httptest.NewRecorder()
						h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
						return w
					}
					var w *httptest.ResponseRecorder
					for n := 0; ; n++ {
						if w = send(); w.Code == http.StatusTooManyRequests {
							break
						}
						if n == 10 {
							t.Fatal("never denied")
						}
					}
					retry, err := strconv.Atoi(w.Header().Get("Retry-After"))
					if err != nil || retry < 1 {
						t.Fatalf("got Retry-After %q, want a positive number of seconds", w.Header().Get("Retry-After"))
					}
					clock.Advance(time.Duration(retry-1) * time.Second)
					if w := send(); w.Code != http.StatusTooManyRequests {
						t.Errorf("%d s after Retry-After %d: got status %d, want 429", retry-1, retry, w.Code)
					}
					clock.Advance(time.Second)
					if w := send(); w.Code != http.StatusOK {
						t.Errorf("%d s after Retry-After %d: got status %d, want 200", retry, retry, w.Code)
					}
				})
			}
		}
	})
}

// keyOfTest keys every request by the test's name, so subtests sharing a store stay apart.
func keyOfTest(t *testing.T) ratelimit.KeyFunc {
	key := keyOf(t)
	return func(ratelimit.Request) (string, error) { return key, nil }
}

// TestMiddlewarePerRoute wraps a whole mux with one limit and gives one route its own.
func TestMiddlewarePerRoute(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		l, err := ratelimit.New(store, fixed(100, time.Minute, "global"))
		if err != nil {
			t.Fatal(err)
		}
		var route string
		mux := http.NewServeMux()
		mux.Handle("GET /items/{id}", okHandler)
		mux.Handle("POST /login", ratelimit.Middleware(l,
			ratelimit.WithPolicies(fixed(2, time.Minute, "login")),
			ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute())),
			ratelimit.WithNow(clock.Now),
		)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { route = r.Pattern })))
		h := ratelimit.Middleware(l, ratelimit.WithNow(clock.Now))(mux)

		send := func(method, path string) *httptest.ResponseRecorder {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
			return w
		}
		for i, want := range []struct {
			code      int
			remaining string
		}{{200, "1"}, {200, "0"}, {429, "0"}} {
			w := send(http.MethodPost, "/login")
			if w.Code != want.code || w.Header().Get("X-RateLimit-Limit") != "2" || w.Header().Get("X-RateLimit-Remaining") != want.remaining {
				t.Errorf("login %d: got %d with limit %q remaining %q, want %d with limit 2 remaining %s", i, w.Code,
					w.Header().Get("X-RateLimit-Limit"), w.Header().Get("X-RateLimit-Remaining"), want.code, want.remaining)
			}
		}
		if route != "POST /login" {
			t.Errorf("the login handler saw pattern %q", route)
		}
		// Other routes only count against the global limit, which the logins used too.
		w := send(http.MethodGet, "/items/7")
		if w.Code != 200 || w.Header().Get("X-RateLimit-Limit") != "100" || w.Header().Get("X-RateLimit-Remaining") != "96" {
			t.Errorf("items: got %d with limit %q remaining %q, want 200 with limit 100 remaining 96", w.Code,
				w.Header().Get("X-RateLimit-Limit"), w.Header().Get("X-RateLimit-Remaining"))
		}
	})
}

// TestMiddlewareClientGone: a request whose client is gone before the check is not served,
// and nobody is paged for it.
func TestMiddlewareClientGone(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		l, err := ratelimit.New(store, fixed(1, time.Minute, "minute"))
		if err != nil {
			t.Fatal(err)
		}
		var reported []error
		handled := false
		h := ratelimit.Middleware(l, ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = append(reported, err) }))(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled = true }))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		if w.Code != 499 || handled || len(reported) != 0 {
			t.Errorf("got status %d, handled %v, reported %v; want 499, not handled, nothing reported", w.Code, handled, reported)
		}
	})
}

// TestMiddlewareShapingWait runs the real shaping wait: it ends when the client goes away.
func TestMiddlewareShapingWait(t *testing.T) {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))
	l, err := ratelimit.New(store, ratelimit.Policy{Limit: 2, Window: time.Hour, Algorithm: algorithms.LeakyBucket{Shaping: true}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var waited time.Duration
	h := ratelimit.Middleware(l, ratelimit.WithWait(func(ctx context.Context, d time.Duration) error {
		waited = d
		cancel() // the client goes away during the wait
		return ratelimit.Sleep(ctx, d)
	}))(okHandler)
	for i, want := range []int{200, 499} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		if w.Code != want {
			t.Errorf("request %d: got status %d, want %d", i, w.Code, want)
		}
	}
	if waited != 30*time.Minute {
		t.Errorf("got a wait of %v, want 30m", waited)
	}
	if err := ratelimit.Sleep(context.Background(), time.Microsecond); err != nil {
		t.Errorf("Sleep: %v", err)
	}
}

// errStore is a store that always fails.
type errStore struct{ err error }

func (s errStore) Check(context.Context, string, []ratelimit.Policy, int64, bool, []algorithms.Result) error {
	return s.err
}
func (s errStore) Reset(context.Context, string, []ratelimit.Policy) error { return s.err }
func (s errStore) Refund(context.Context, string, []ratelimit.Policy, int64, int64) error {
	return s.err
}

// brokenStores are stores that fail: a broken store in memory, and Redis that is down.
var brokenStores = []struct {
	name  string
	store func(t *testing.T) ratelimit.Store
	cause string
}{
	{"memory-broken", func(t *testing.T) ratelimit.Store { return errStore{errors.New("disk on fire")} }, "ratelimit: store: disk on fire"},
	{"redis-down", func(t *testing.T) ratelimit.Store { return ratelimit.NewRedisStore(deadRedis(t)) }, "ratelimit: store: redis check: dial tcp"},
}

func TestMiddlewareStoreFailure(t *testing.T) {
	for _, b := range brokenStores {
		t.Run(b.name, func(t *testing.T) {
			store := b.store(t)
			for _, c := range []struct {
				name  string
				opts  []ratelimit.Option
				steps []specStep
			}{
				{"fail-open by default", nil, []specStep{
					{status: 200, handled: true, reported: b.cause},
				}},
				{"fail-open", []ratelimit.Option{ratelimit.FailClosed(503), ratelimit.FailOpen()}, []specStep{
					{status: 200, handled: true, reported: b.cause},
				}},
				{"fail-closed 503", []ratelimit.Option{ratelimit.FailClosed(503)}, []specStep{
					{status: 503, retry: "1", reported: b.cause, body: "Service Unavailable: the service is temporarily unavailable. Retry in 1 second."},
				}},
				{"fail-closed 429", []ratelimit.Option{ratelimit.FailClosed(429)}, []specStep{
					{status: 429, retry: "1", reported: b.cause, body: "Too Many Requests: Retry in 1 second."},
				}},
				{"fail-closed problem", []ratelimit.Option{ratelimit.FailClosed(503), ratelimit.WithProblemJSON()}, []specStep{
					{status: 503, retry: "1", reported: b.cause, headers: map[string]string{"Content-Type": "application/problem+json"},
						body: `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"the service is temporarily unavailable. Retry in 1 second."}`},
				}},
			} {
				t.Run(c.name, func(t *testing.T) {
					l, err := ratelimit.New(store, ratelimit.Policy{Limit: 1, Window: time.Minute})
					if err != nil {
						t.Fatal(err)
					}
					runSpec(t, store, newFakeClock(), specCase{policies: l.Policies(), opts: opts(c.opts...), steps: c.steps})
				})
			}
		})
	}
}

// TestMiddlewareStoreTimeout: a store that does not answer costs the request the timeout, not
// more, even when the store ignores its context.
func TestMiddlewareStoreTimeout(t *testing.T) {
	for _, c := range []struct {
		name  string
		store func(t *testing.T) ratelimit.Store
	}{
		{"hanging-store", func(t *testing.T) ratelimit.Store { return newHangingStore(t) }},
		// go-redis without ContextTimeoutEnabled waits for its ReadTimeout, 3 s by default.
		{"redis-not-answering", func(t *testing.T) ratelimit.Store { return ratelimit.NewRedisStore(silentRedis(t, false)) }},
		// With ContextTimeoutEnabled the call is direct, and go-redis keeps the deadline.
		{"redis-not-answering-ctx-timeout", func(t *testing.T) ratelimit.Store { return ratelimit.NewRedisStore(silentRedis(t, true)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := c.store(t)
			for _, fail := range []struct {
				opt    ratelimit.Option
				status int
			}{{ratelimit.FailOpen(), 200}, {ratelimit.FailClosed(503), 503}} {
				l, err := ratelimit.New(store, ratelimit.Policy{Limit: 1, Window: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				var reported []error
				h := ratelimit.Middleware(l, fail.opt, ratelimit.WithTimeout(20*time.Millisecond),
					ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = append(reported, err) }))(okHandler)
				start := time.Now()
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
				if elapsed := time.Since(start); elapsed > time.Second {
					t.Errorf("the request took %v; the timeout is 20ms", elapsed)
				}
				if w.Code != fail.status {
					t.Errorf("got status %d, want %d", w.Code, fail.status)
				}
				if len(reported) != 1 || !errors.Is(reported[0], context.DeadlineExceeded) ||
					!strings.HasPrefix(reported[0].Error(), "ratelimit: store did not answer within 20ms") {
					t.Errorf("reported %v, want one error wrapping context.DeadlineExceeded", reported)
				}
			}
		})
	}
}

// hangingStore never answers, whatever its context says, until the test ends.
type hangingStore struct{ release chan struct{} }

func newHangingStore(t *testing.T) hangingStore {
	s := hangingStore{make(chan struct{})}
	t.Cleanup(func() { close(s.release) })
	return s
}

func (s hangingStore) Check(context.Context, string, []ratelimit.Policy, int64, bool, []algorithms.Result) error {
	<-s.release
	return errors.New("released")
}
func (s hangingStore) Reset(context.Context, string, []ratelimit.Policy) error { return nil }
func (s hangingStore) Refund(context.Context, string, []ratelimit.Policy, int64, int64) error {
	return nil
}

// deadRedis returns a client of an address where nothing listens.
func deadRedis(t *testing.T) *redis.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

// silentRedis returns a client of a server that accepts connections and never answers.
func silentRedis(t *testing.T, contextTimeout bool) *redis.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, ContextTimeoutEnabled: contextTimeout})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMiddlewareRepeatedKeyHeader: a client that repeats its API key header with a new junk
// line each time does not get a new quota each time. The application reads the first line
// (Header.Get) and accepts the key; the limiter refuses the request as malformed.
func TestMiddlewareRepeatedKeyHeader(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())), ratelimit.Policy{Limit: 3, Window: time.Minute})
	var reported []error
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != "valid-key" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	srv := httptest.NewServer(ratelimit.Middleware(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
		ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = append(reported, err) }))(app))
	defer srv.Close()
	send := func(lines ...string) int {
		t.Helper()
		r, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range lines {
			r.Header.Add("X-API-Key", v) // one field line each, on the wire
		}
		resp, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	ok := 0
	for i := range 50 {
		var status int
		if i%2 == 0 {
			status = send("valid-key")
			if want := http.StatusOK; i >= 6 {
				want = http.StatusTooManyRequests
				if status != want {
					t.Errorf("request %d, one line: got status %d, want %d", i, status, want)
				}
			} else if status != want {
				t.Errorf("request %d, one line: got status %d, want %d", i, status, want)
			}
		} else {
			status = send("valid-key", "junk"+strconv.Itoa(i))
			if status != http.StatusBadRequest {
				t.Errorf("request %d, a junk second line: got status %d, want 400", i, status)
			}
		}
		if status == http.StatusOK {
			ok++
		}
	}
	if ok > 3 {
		t.Errorf("%d requests were served under PerMinute(3)", ok)
	}
	if len(reported) != 25 || !strings.Contains(reported[0].Error(), "ratelimit: key: header X-Api-Key has a comma") {
		t.Errorf("got %d errors reported (first %v), want 25 about the comma", len(reported), reported)
	}
}

// TestMiddlewareNegativeCost: a negative cost is answered 400 and reported, whatever the fail
// mode, and the store is not asked.
func TestMiddlewareNegativeCost(t *testing.T) {
	for _, fail := range []ratelimit.Option{ratelimit.FailOpen(), ratelimit.FailClosed(503), ratelimit.FailClosed(429)} {
		l := mustNew(t, errStore{errors.New("the store was asked")}, ratelimit.Policy{Limit: 1, Window: time.Minute})
		var reported []error
		handled := false
		h := ratelimit.Middleware(l, fail, ratelimit.WithProblemJSON(),
			ratelimit.WithCost(func(ratelimit.Request) int64 { return math.MinInt64 }),
			ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = append(reported, err) }))(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled = true }))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != http.StatusBadRequest || handled || w.Header().Get("Retry-After") != "" ||
			w.Body.String() != `{"type":"about:blank","title":"Bad Request","status":400,"detail":"the request's cost is invalid."}`+"\n" {
			t.Errorf("got status %d, handled %v, Retry-After %q, body %q; want 400, not handled, no Retry-After",
				w.Code, handled, w.Header().Get("Retry-After"), w.Body)
		}
		if len(reported) != 1 || reported[0].Error() != "ratelimit: cost: the cost function returned -9223372036854775808; a cost cannot be negative" {
			t.Errorf("reported %v, want the negative cost alone", reported)
		}
	}
}

// TestMiddlewareHugeCost: a cost far above every capacity, up to math.MaxInt64, is denied for
// ever (429 without Retry-After) by every algorithm, is never let through, and leaves the
// quota as it was.
func TestMiddlewareHugeCost(t *testing.T) {
	for _, alg := range allAlgorithms {
		for _, cost := range []int64{math.MaxInt64, 1 << 54} {
			t.Run(alg.Name()+"/"+strconv.FormatInt(cost, 10), func(t *testing.T) {
				l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())),
					ratelimit.Policy{Name: "p", Limit: 3, Window: time.Minute, Algorithm: alg})
				var reported []error
				handled := 0
				h := ratelimit.Middleware(l,
					ratelimit.WithCost(func(r ratelimit.Request) int64 {
						if r.Header("X-Small") != "" {
							return 1
						}
						return cost
					}),
					ratelimit.WithWait(func(context.Context, time.Duration) error { return nil }),
					ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = append(reported, err) }))(
					http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled++ }))
				for i := range 5 {
					w := httptest.NewRecorder()
					h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
					if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "" ||
						!strings.Contains(w.Body.String(), "it cannot be admitted") {
						t.Errorf("request %d: got status %d, Retry-After %q, body %q; want 429 for ever, without Retry-After",
							i, w.Code, w.Header().Get("Retry-After"), w.Body)
					}
				}
				if handled != 0 || len(reported) != 0 {
					t.Fatalf("the handler ran %d times, errors reported %v; want neither", handled, reported)
				}
				// The quota is untouched: three small requests pass, the fourth does not.
				for i, want := range []int{200, 200, 200, 429} {
					r := httptest.NewRequest(http.MethodGet, "/", nil)
					r.Header.Set("X-Small", "1")
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					if w.Code != want {
						t.Errorf("small request %d after the huge ones: got status %d, want %d", i, w.Code, want)
					}
				}
			})
		}
	}
}

// TestMiddlewareFallbackKey: behind a load balancer, a middleware around the whole mux keys by
// client IP and route; the route is unknown there, so every request falls back. With the
// proxies given to WithFallbackKey each client has its own quota; without, every request falls
// back to the connection's address, the balancer's, as documented.
func TestMiddlewareFallbackKey(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, c := range []struct {
			name, policy string
			fallback     []ratelimit.Option
			want         []int // the status of each request below
		}{
			{"with the proxies", "with-proxies", []ratelimit.Option{ratelimit.WithFallbackKey(ratelimit.KeyByIP(ratelimit.TrustProxies("10.0.0.0/8")))},
				[]int{200, 200, 429, 200, 200, 429, 200}},
			{"without: the connection's address", "without", nil,
				[]int{200, 200, 429, 429, 429, 429, 429}},
		} {
			t.Run(c.name, func(t *testing.T) {
				l := mustNew(t, store, fixed(2, time.Minute, c.policy))
				mux := http.NewServeMux()
				mux.Handle("GET /items/{id}", okHandler)
				options := append([]ratelimit.Option{
					ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(ratelimit.TrustProxies("10.0.0.0/8")), ratelimit.KeyByRoute())),
					ratelimit.WithNow(clock.Now),
				}, c.fallback...)
				h := ratelimit.Middleware(l, options...)(mux)
				for i, client := range []string{"203.0.113.1", "203.0.113.1", "203.0.113.1", "203.0.113.2", "203.0.113.2", "203.0.113.2", "198.51.100.7"} {
					r := httptest.NewRequest(http.MethodGet, "/items/7", nil)
					r.RemoteAddr = "10.0.0.1:5555" // the load balancer
					r.Header.Set("X-Forwarded-For", client+", 10.0.0.2")
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					if w.Code != c.want[i] {
						t.Errorf("request %d from %s: got status %d, want %d", i, client, w.Code, c.want[i])
					}
				}
			})
		}
	})
}

// TestMiddlewareFallbackKeyFindsNoKey: a fallback that finds no key either is a bad request,
// reported; the request is never let through unlimited.
func TestMiddlewareFallbackKeyFindsNoKey(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute})
	var reported []error
	handled := false
	h := ratelimit.Middleware(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
		ratelimit.WithFallbackKey(ratelimit.KeyByHeader("X-Tenant")),
		ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = append(reported, err) }))(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled = true }))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	if w.Code != http.StatusBadRequest || handled || len(reported) != 1 || !errors.Is(reported[0], ratelimit.ErrNoKey) ||
		!strings.Contains(reported[0].Error(), "neither the key function nor the fallback key function found a key") {
		t.Errorf("got status %d, handled %v, reported %v; want 400, not handled, the missing key reported", w.Code, handled, reported)
	}
	// The fallback's key is used, and limits.
	for i, want := range []int{200, 429} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("X-Tenant", "t1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("request %d with a tenant: got status %d, want %d", i, w.Code, want)
		}
	}
}
