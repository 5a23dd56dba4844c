package httpspec

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit/cost"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// specCase is one scenario: how to build the application, and its requests in order.
type specCase struct {
	name string
	// store, when set, is the case's own store (one that fails, say) instead of an empty
	// store of the engine.
	store ratelimit.Store
	// timeout, when set, is the store deadline of the case's guards (WithTimeout), instead of
	// a minute, which no store of a test misses on a busy machine.
	timeout time.Duration
	build   func(e *env) Config
	steps   []step
}

// The limiter's response bodies and types, as a client sees them.
const (
	plain   = "text/plain; charset=utf-8"
	problem = "application/problem+json"

	bodyRetry1      = "Too Many Requests: Rate limit exceeded. Retry in 1 second.\n"
	bodyTooCostly   = "Too Many Requests: This request costs more than the rate limit allows; it cannot be admitted.\n"
	bodyUnavailable = "Service Unavailable: the service is temporarily unavailable. Retry in 1 second.\n"
	bodyFailed429   = "Too Many Requests: Retry in 1 second.\n"
	bodyBadRequest  = "Bad Request: the request's client could not be identified.\n"
	bodyBadCost     = "Bad Request: the request's cost is invalid.\n"
	bodyNoKey       = "Unauthorized: the request does not identify its client.\n"
	bodyGone        = "Client Closed Request: the request was cancelled.\n"
	bodyForbidden   = "Forbidden: access from this client is denied.\n"
)

// xrl returns the X-RateLimit headers of an allowed request.
func xrl(limit, remaining int64, reset string) map[string]string {
	return map[string]string{
		"X-Ratelimit-Limit":     strconv.FormatInt(limit, 10),
		"X-Ratelimit-Remaining": strconv.FormatInt(remaining, 10),
		"X-Ratelimit-Reset":     reset,
	}
}

// denied returns the headers of a limiter's refusal: h, Retry-After (unless retry is ""),
// the content type and nosniff.
func denied(h map[string]string, retry, contentType string) map[string]string {
	out := map[string]string{"Content-Type": contentType, "X-Content-Type-Options": "nosniff"}
	for k, v := range h {
		out[k] = v
	}
	if retry != "" {
		out["Retry-After"] = retry
	}
	return out
}

// with returns h and the header name: value.
func with(h map[string]string, name, value string) map[string]string {
	out := map[string]string{name: value}
	for k, v := range h {
		out[k] = v
	}
	return out
}

// costFromHeader reads the cost of a request from its X-Cost header (default 1).
func costFromHeader(r ratelimit.Request) int64 {
	n, err := strconv.ParseInt(r.Header("X-Cost"), 10, 64)
	if err != nil {
		return 1
	}
	return n
}

// fixed is a fixed-window policy, whose headers are easy to read: its windows end at whole
// multiples of its length after T0.
func fixed(name string, limit int64, window time.Duration) ratelimit.Policy {
	return ratelimit.Policy{Name: name, Limit: limit, Window: window, Algorithm: algorithms.FixedWindow{}}
}

// opts builds a Config of the case's limiter and options.
func opts(l *ratelimit.Limiter, o ...ratelimit.Option) Config {
	return Config{Limiter: l, Options: o}
}

// Cost headers of requests that cost more than any policy holds.
const (
	maxCost  = "9223372036854775807" // math.MaxInt64
	hugeCost = "18014398509481984"   // 2^54: past the exact integers of Lua's doubles
)

var cases = append([]specCase{
	{
		// 2/s and 3/min, both GCRA: the per-second policy binds first, then the per-minute one.
		name: "two windows: allowed, denied, allowed again",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 2, Window: time.Second}, ratelimit.Policy{Limit: 3, Window: time.Minute}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(2, 1, epoch(1))}},
			{want: want{status: 200, handled: true, header: xrl(2, 0, epoch(1))}},
			{want: want{status: 429, header: denied(xrl(2, 0, epoch(1)), "1", plain), body: bodyRetry1}},
			{advance: time.Second, want: want{status: 200, handled: true, header: xrl(3, 0, epoch(60))}},
			{want: want{status: 429, header: denied(xrl(3, 0, epoch(60)), "19", plain), body: retryIn(19)}},
		},
	},
	{
		name: "fixed window: headers on allowed and denied responses",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("minute", 3, time.Minute)))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(3, 2, epoch(60))}},
			{want: want{status: 200, handled: true, header: xrl(3, 1, epoch(60))}},
			{want: want{status: 200, handled: true, header: xrl(3, 0, epoch(60))}},
			{want: want{status: 429, header: denied(xrl(3, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			{advance: time.Minute, want: want{status: 200, handled: true, header: xrl(3, 2, epoch(120))}},
		},
	},
	{
		name: "Retry-After rounds up and is true",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("minute", 1, time.Minute)))
		},
		steps: []step{
			{advance: 500 * time.Millisecond, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},                          // 59.5 s
			{advance: 59 * time.Second, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "1", plain), body: bodyRetry1}}, // 0.5 s: at least 1
			{advance: time.Second, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(120))}},
		},
	},
	{
		// One every 1.5 s.
		name: "Retry-After of GCRA, rounded up",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Name: "gcra", Limit: 2, Window: 3 * time.Second}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(2, 1, epoch(2))}}, // reset in 1.5 s
			{want: want{status: 200, handled: true, header: xrl(2, 0, epoch(3))}},
			{want: want{status: 429, header: denied(xrl(2, 0, epoch(3)), "2", plain), body: retryIn(2)}}, // 1.5 s
			{advance: time.Second, want: want{status: 429, header: denied(xrl(2, 0, epoch(3)), "1", plain), body: bodyRetry1}},
			{advance: time.Second, want: want{status: 200, handled: true, header: xrl(2, 0, epoch(5))}},
		},
	},
	{
		name: "Retry-After of a sliding counter, to the microsecond",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Name: "counter", Limit: 4, Window: 4 * time.Second, Algorithm: algorithms.SlidingCounter{}}),
				ratelimit.WithCost(costFromHeader))
		},
		steps: []step{
			{header: []string{"X-Cost", "3"}, want: want{status: 200, handled: true, header: xrl(4, 1, epoch(8))}},
			{header: []string{"X-Cost", "2"}, want: want{status: 429, header: denied(xrl(4, 1, epoch(8)), "6", plain), body: retryIn(6)}}, // 5.333334 s
			{advance: 5 * time.Second, header: []string{"X-Cost", "2"}, want: want{status: 429, header: denied(xrl(4, 1, epoch(8)), "1", plain), body: bodyRetry1}},
			{advance: time.Second, header: []string{"X-Cost", "2"}, want: want{status: 200, handled: true, header: xrl(4, 0, epoch(12))}},
		},
	},
	{
		name: "the binding policy: least remaining, else the longest wait",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("second", 1, time.Second), fixed("minute", 2, time.Minute)))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(1, 0, epoch(1))}},                           // second: 0 left, minute: 1
			{want: want{status: 429, header: denied(xrl(1, 0, epoch(1)), "1", plain), body: bodyRetry1}},    // only second denies
			{advance: time.Second, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(2))}},     // both 0 left: the first
			{want: want{status: 429, header: denied(xrl(2, 0, epoch(60)), "59", plain), body: retryIn(59)}}, // both deny: minute waits longer
		},
	},
	{
		// The third policy has the name New gives it.
		name: "IETF draft headers with X-RateLimit",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("second", 1, time.Second), fixed("minute", 2, time.Minute), ratelimit.Policy{Limit: 100, Window: time.Hour}),
				ratelimit.WithResponse(ratelimit.Response{IETFDraft: 11}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: threePolicies(xrl(1, 0, epoch(1)), `"second";r=0;t=1`)}},
			{advance: time.Second, want: want{status: 200, handled: true, header: threePolicies(xrl(1, 0, epoch(2)), `"second";r=0;t=1`)}},
			{want: want{status: 429, header: denied(threePolicies(xrl(2, 0, epoch(60)), `"minute";r=0;t=59`), "59", plain), body: retryIn(59)}},
		},
	},
	{
		name: "IETF draft headers only",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Name: "burst", Limit: 2, Window: time.Second}, ratelimit.Policy{Name: "sustained", Limit: 3, Window: time.Minute}),
				ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true, IETFDraft: 11}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: withIETF(nil, `"burst";r=1;t=1`)}},
			{want: want{status: 200, handled: true, header: withIETF(nil, `"burst";r=0;t=1`)}},
			{want: want{status: 429, header: denied(withIETF(nil, `"burst";r=0;t=1`), "1", plain), body: bodyRetry1}},
		},
	},
	{
		// Draft -11's t is the effective window: within t seconds no more than r. At 10 per
		// minute (one unit every 6 s), the next unit is never more than 6 s away, however
		// long the bucket takes to refill (draft -10's t, the case below).
		name: "IETF draft -11: t is the effective window (GCRA)",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Name: "steady", Limit: 10, Window: time.Minute}),
				ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true, IETFDraft: 11}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: steady(`"steady";r=9;t=6`)}},
			{want: want{status: 200, handled: true, header: steady(`"steady";r=8;t=6`)}},
			{advance: 2 * time.Second, want: want{status: 200, handled: true, header: steady(`"steady";r=7;t=4`)}},
		},
	},
	{
		name: "IETF draft -10 on request: t is the time until the quota is reset (GCRA)",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Name: "steady", Limit: 10, Window: time.Minute}),
				ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true, IETFDraft: 10}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: steady(`"steady";r=9;t=6`)}},
			{want: want{status: 200, handled: true, header: steady(`"steady";r=8;t=12`)}},
			{advance: 2 * time.Second, want: want{status: 200, handled: true, header: steady(`"steady";r=7;t=16`)}},
		},
	},
	{
		// A sliding log's effective window ends when its oldest request leaves the window;
		// draft -10's t when its newest does. On a denial, t and Retry-After name one moment.
		name: "IETF draft -11 of a sliding log",
		build: func(e *env) Config {
			p := ratelimit.Policy{Name: "log", Limit: 3, Window: time.Minute, Algorithm: algorithms.SlidingLog{}}
			return opts(e.limiter(p), ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true, IETFDraft: 11}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: logged(`"log";r=2;t=60`)}},
			{advance: 20 * time.Second, want: want{status: 200, handled: true, header: logged(`"log";r=1;t=40`)}},
			{advance: 20 * time.Second, want: want{status: 200, handled: true, header: logged(`"log";r=0;t=20`)}},
			{want: want{status: 429, header: denied(logged(`"log";r=0;t=20`), "20", plain), body: retryIn(20)}},
		},
	},
	{
		name: "IETF draft -10 of a sliding log",
		build: func(e *env) Config {
			p := ratelimit.Policy{Name: "log", Limit: 3, Window: time.Minute, Algorithm: algorithms.SlidingLog{}}
			return opts(e.limiter(p), ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true, IETFDraft: 10}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: logged(`"log";r=2;t=60`)}},
			{advance: 20 * time.Second, want: want{status: 200, handled: true, header: logged(`"log";r=1;t=60`)}},
			{advance: 20 * time.Second, want: want{status: 200, handled: true, header: logged(`"log";r=0;t=60`)}},
			{want: want{status: 429, header: denied(logged(`"log";r=0;t=60`), "20", plain), body: retryIn(20)}},
		},
	},
	{
		name: "no rate-limit headers, Retry-After all the same",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: map[string]string{}}},
			{want: want{status: 429, header: denied(nil, "1", plain), body: bodyRetry1}},
		},
	},
	{
		name: "problem JSON lists the violated policies",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("second", 1, time.Second), fixed("minute", 1, time.Minute), fixed("hour", 10, time.Hour)),
				ratelimit.WithResponse(ratelimit.Response{ProblemJSON: true}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(1, 0, epoch(1))}},
			{want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", problem),
				body: `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",` +
					`"title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,` +
					`"detail":"Rate limit exceeded. Retry in 60 seconds.","violated-policies":["second","minute"]}` + "\n"}},
		},
	},
	{
		name: "deny response of the application",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("minute", 1, time.Minute)),
				ratelimit.WithResponse(ratelimit.Response{Deny: func(r ratelimit.Request, d ratelimit.Decision) (int, string, []byte) {
					return http.StatusServiceUnavailable, "application/json",
						[]byte(`{"error":"slow down","policy":"` + d.Policy.Name + `","path":"` + r.Path() + `"}`)
				}}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{want: want{status: 503, header: denied(xrl(1, 0, epoch(60)), "60", "application/json"),
				body: `{"error":"slow down","policy":"minute","path":"/items/1"}`}},
		},
	},
	{
		// No content type: no nosniff either. (A framework may add its default Content-Type.)
		name: "deny response with status 0 answers 429",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("minute", 1, time.Minute)),
				ratelimit.WithResponse(ratelimit.Response{Deny: func(ratelimit.Request, ratelimit.Decision) (int, string, []byte) { return 0, "", nil }}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{want: want{status: 429, header: with(xrl(1, 0, epoch(60)), "Retry-After", "60"), body: ""}},
		},
	},
	{
		name: "cost: charged, 0 only reads, above capacity never admitted, negative a bad request",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("minute", 3, time.Minute)), ratelimit.WithCost(costFromHeader))
		},
		steps: []step{
			{header: []string{"X-Cost", "4"}, want: want{status: 429, header: denied(xrl(3, 3, epoch(0)), "", plain), body: bodyTooCostly}},
			{header: []string{"X-Cost", "0"}, want: want{status: 200, handled: true, header: xrl(3, 3, epoch(0))}},
			{header: []string{"X-Cost", "2"}, want: want{status: 200, handled: true, header: xrl(3, 1, epoch(60))}},
			{header: []string{"X-Cost", "2"}, want: want{status: 429, header: denied(xrl(3, 1, epoch(60)), "60", plain), body: retryIn(60)}},
			// A negative cost is the request's fault, not the store's: never failed open.
			{header: []string{"X-Cost", "-1"}, want: want{status: 400, header: denied(nil, "", plain), body: bodyBadCost, errs: 1,
				reported: "ratelimit: cost: the cost function returned -1; a cost cannot be negative", kind: "bad_request"}},
			{header: []string{"X-Cost", "1"}, want: want{status: 200, handled: true, header: xrl(3, 0, epoch(60)), errs: 1}}, // it charged nothing
		},
	},
	{
		// Were the store asked, the request would fail open.
		name:  "negative cost: refused without asking the store, fail open",
		store: brokenStore{},
		build: func(e *env) Config {
			return opts(e.limiter(fixed("minute", 3, time.Minute)), ratelimit.WithCost(costFromHeader), ratelimit.WithResponse(ratelimit.Response{ProblemJSON: true}))
		},
		steps: []step{
			{header: []string{"X-Cost", "-9223372036854775808"}, want: want{status: 400, header: denied(nil, "", problem), errs: 1,
				body:     `{"type":"about:blank","title":"Bad Request","status":400,"detail":"the request's cost is invalid."}` + "\n",
				reported: "ratelimit: cost: the cost function returned -9223372036854775808; a cost cannot be negative", kind: "bad_request"}},
		},
	},
	{
		name: "skipped requests are neither checked nor charged",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}),
				ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool { return r.Path() == "/health" }}))
		},
		steps: []step{
			{target: "/health", want: want{status: 200, handled: true}},
			{target: "/health", want: want{status: 200, handled: true}},
			{want: want{status: 200, handled: true, header: xrl(1, 0, epoch(1))}},
			{want: want{status: 429, header: denied(xrl(1, 0, epoch(1)), "1", plain), body: bodyRetry1}},
			{target: "/health", want: want{status: 200, handled: true}},
		},
	},
	{
		name: "allow and deny lists: by network through the trusted proxy, by key; deny wins; no store call",
		// A store that fails every call: a request the lists decide never reaches it.
		store: brokenStore{},
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}),
				ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
				ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.1"),
				ratelimit.WithAccess(ratelimit.Access{
					Allow: []string{"198.51.100.0/24"}, Deny: []string{"198.51.100.66", "2001:db8:bad::/48"},
					DenyKeys: []string{"hdr:x-api-key:revoked"},
				}))
		},
		steps: []step{
			{remote: "10.0.0.1:5555", header: []string{"X-Forwarded-For", "198.51.100.7"}, want: want{status: 200, handled: true, result: "allowlisted"}},
			{remote: "10.0.0.1:5555", header: []string{"X-Forwarded-For", "198.51.100.7"}, want: want{status: 200, handled: true, result: "allowlisted"}},
			{remote: "198.51.100.66:1", want: want{status: 403, header: denied(nil, "", plain), body: bodyForbidden, result: "denylisted"}},
			{remote: "[2001:db8:bad:1::9]:1", want: want{status: 403, header: denied(nil, "", plain), body: bodyForbidden, result: "denylisted"}},
			{remote: "10.0.0.1:5555", header: []string{"X-Forwarded-For", "198.51.100.8", "X-API-Key", "revoked"}, want: want{status: 403, header: denied(nil, "", plain), body: bodyForbidden, result: "denylisted"}},
			// An untrusted peer naming an allowed address is limited: here the store is down.
			{remote: "192.0.2.9:1", header: []string{"X-Forwarded-For", "198.51.100.7"}, want: want{status: 200, handled: true, errs: 1, kind: "unavailable", result: "unlimited"}},
		},
	},
	{
		name:  "fail open (default): store down",
		store: brokenStore{},
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, errs: 1, reported: "ratelimit: store: unavailable: httpspec: the store is down", kind: "unavailable"}},
			{want: want{status: 200, handled: true, errs: 2}},
		},
	},
	{
		// The store always answers at its deadline, however slow the machine.
		name:    "fail open: store does not answer in time",
		store:   slowStore{},
		timeout: time.Millisecond,
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, errs: 1, reported: "(the guard's timeout is 1ms)", kind: "timeout"}},
		},
	},
	{
		name:  "fail closed 503: store down; a negative cost is still a bad request",
		store: brokenStore{},
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.FailClosed(503), ratelimit.WithCost(costFromHeader))
		},
		steps: []step{
			{want: want{status: 503, header: denied(nil, "1", plain), body: bodyUnavailable, errs: 1,
				reported: "ratelimit: store: unavailable: httpspec: the store is down", kind: "unavailable"}},
			{header: []string{"X-Cost", "-1"}, want: want{status: 400, header: denied(nil, "", plain), body: bodyBadCost, errs: 2, kind: "bad_request"}},
		},
	},
	{
		name:  "fail closed 503, problem JSON: store down",
		store: brokenStore{},
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.FailClosed(503), ratelimit.WithResponse(ratelimit.Response{ProblemJSON: true}))
		},
		steps: []step{
			{want: want{status: 503, header: denied(nil, "1", problem), errs: 1,
				body: `{"type":"about:blank","title":"Service Unavailable","status":503,"detail":"the service is temporarily unavailable. Retry in 1 second."}` + "\n"}},
		},
	},
	{
		name:    "fail closed 429: store does not answer in time, problem JSON",
		store:   slowStore{},
		timeout: time.Millisecond,
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}),
				ratelimit.FailClosed(429), ratelimit.WithResponse(ratelimit.Response{ProblemJSON: true}))
		},
		steps: []step{
			{want: want{status: 429, header: denied(nil, "1", problem), errs: 1, kind: "timeout",
				body: `{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Retry in 1 second."}` + "\n"}},
		},
	},
	{
		name:  "fail closed 429: store down",
		store: brokenStore{},
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.FailClosed(429))
		},
		steps: []step{
			{want: want{status: 429, header: denied(nil, "1", plain), body: bodyFailed429, errs: 1}},
		},
	},
	{
		// Shaping at 2/s: one slot every 500 ms, two queued at most.
		name: "shaping: requests wait for their slot",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 2, Window: time.Second, Algorithm: algorithms.LeakyBucket{Shaping: true}}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(2, 1, epoch(1))}},
			{want: want{status: 200, handled: true, header: xrl(2, 0, epoch(1)), waits: ms(500)}},
			{want: want{status: 429, header: denied(xrl(2, 0, epoch(1)), "1", plain), body: bodyRetry1, waits: ms(500)}},
			// A client that goes away while it waits is not served, and nobody is told.
			{advance: 500 * time.Millisecond, cancelWait: true,
				want: want{status: 499, header: denied(nil, "", plain), body: bodyGone, waits: ms(500, 500)}},
		},
	},
	{
		name: "missing key refused",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}),
				ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.WithAccess(ratelimit.Access{MissingKey: 401}))
		},
		steps: []step{
			{want: want{status: 401, header: denied(nil, "", plain), body: bodyNoKey}},
			{header: []string{"X-API-Key", "k1"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(1))}},
			{header: []string{"X-API-Key", "k1"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(1)), "1", plain), body: bodyRetry1}},
			{header: []string{"X-API-Key", "k2"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(1))}},
		},
	},
	{
		// A typical authentication middleware runs first and stores the user the framework's
		// way; KeyByUser reads it there, and requests without a user are refused.
		name: "KeyByUser behind an authentication middleware",
		build: func(e *env) Config {
			c := opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}),
				ratelimit.WithKey(ratelimit.KeyByUser(UserKey)), ratelimit.WithAccess(ratelimit.Access{MissingKey: 401}))
			c.Auth = true
			return c
		},
		steps: []step{
			{want: want{status: 401, header: denied(nil, "", plain), body: bodyNoKey}},
			{header: []string{"X-User", "alice"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(1))}},
			{header: []string{"X-User", "alice"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(1)), "1", plain), body: bodyRetry1}},
			{header: []string{"X-User", "bob"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(1))}},
		},
	},
	{
		name: "missing key falls back to the client IP",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("minute", 1, time.Minute)), ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}}, // by IP: not unlimited
			{header: []string{"X-API-Key", "k1"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{remote: "192.0.2.2:1", header: []string{"X-API-Key", "k1"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			{remote: "192.0.2.2:1", want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			// An API key that reads like an IP address does not share that address's quota.
			{remote: "192.0.2.3:1", header: []string{"X-API-Key", "192.0.2.4"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{remote: "192.0.2.4:1", want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
		},
	},
	{
		// Behind a load balancer, a request without a key is limited by its client, whom the
		// trusted proxies name, not by the balancer's address.
		name: "missing key falls back to the client IP behind trusted proxies",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("minute", 2, time.Minute)), ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
				ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8"))
		},
		steps: []step{
			{remote: "10.0.0.1:5555", header: []string{"X-Forwarded-For", "203.0.113.1, 10.0.0.2"}, want: want{status: 200, handled: true, header: xrl(2, 1, epoch(60))}},
			{remote: "10.0.0.1:5555", header: []string{"X-Forwarded-For", "203.0.113.1, 10.0.0.2"}, want: want{status: 200, handled: true, header: xrl(2, 0, epoch(60))}},
			{remote: "10.0.0.1:5555", header: []string{"X-Forwarded-For", "203.0.113.1, 10.0.0.2"}, want: want{status: 429, header: denied(xrl(2, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			{remote: "10.0.0.1:5555", header: []string{"X-Forwarded-For", "203.0.113.2, 10.0.0.2"}, want: want{status: 200, handled: true, header: xrl(2, 1, epoch(60))}},
			{remote: "10.0.0.1:5555", header: []string{"X-Forwarded-For", "198.51.100.7"}, want: want{status: 200, handled: true, header: xrl(2, 1, epoch(60))}},
			// The client is the client, directly or through the proxies.
			{remote: "203.0.113.2:1234", want: want{status: 200, handled: true, header: xrl(2, 0, epoch(60))}},
		},
	},
	{
		// KeyOr finds the first key; a request with none of them is limited by its client IP.
		name: "KeyOr: the first key found, else the client IP",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("minute", 1, time.Minute)),
				ratelimit.WithKey(ratelimit.KeyOr(ratelimit.KeyByHeader("X-API-Key"), ratelimit.KeyByHeader("X-Tenant"))))
		},
		steps: []step{
			{header: []string{"X-Tenant", "t1"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{remote: "192.0.2.2:1", header: []string{"X-Tenant", "t1"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			{header: []string{"X-API-Key", "k1", "X-Tenant", "t1"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
		},
	},
	{
		name: "key longer than 4096 bytes is a bad request",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")))
		},
		steps: []step{
			{header: []string{"X-API-Key", strings.Repeat("k", 4097)},
				want: want{status: 400, header: denied(nil, "", plain), body: bodyBadRequest, errs: 1,
					reported: "header X-Api-Key is 4097 bytes, more than 4096", kind: "bad_request"}},
		},
	},
	{
		// A client that repeats its API-key header, with a new second line each time, gets no
		// new quota each time: Request.Header joins the lines, and a comma is no identity. The
		// application, reading the first line, would have accepted the key.
		name: "repeated key header is a bad request, not a new quota",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("minute", 2, time.Minute)), ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")))
		},
		steps: []step{
			{header: []string{"X-API-Key", "valid-key"}, want: want{status: 200, handled: true, header: xrl(2, 1, epoch(60))}},
			{header: []string{"X-API-Key", "valid-key", "X-API-Key", "junk1"}, want: want{status: 400, header: denied(nil, "", plain), body: bodyBadRequest, errs: 1,
				reported: "ratelimit: key: header X-Api-Key has a comma", kind: "bad_request"}},
			{header: []string{"X-API-Key", "valid-key", "X-API-Key", "junk2"}, want: want{status: 400, header: denied(nil, "", plain), body: bodyBadRequest, errs: 2}},
			{header: []string{"X-API-Key", "valid-key"}, want: want{status: 200, handled: true, header: xrl(2, 0, epoch(60)), errs: 2}},
			{header: []string{"X-API-Key", "valid-key"}, want: want{status: 429, header: denied(xrl(2, 0, epoch(60)), "60", plain), body: retryIn(60), errs: 2}},
		},
	},
	{
		name: "spoofed forwarding headers give no new quota",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 2, Window: time.Minute}))
		},
		steps: []step{
			{header: []string{"X-Forwarded-For", "203.0.113.1"}, want: want{status: 200, handled: true, header: xrl(2, 1, epoch(30))}},
			{header: []string{"X-Forwarded-For", "203.0.113.2", "X-Real-IP", "203.0.113.3", "Forwarded", "for=203.0.113.4"},
				want: want{status: 200, handled: true, header: xrl(2, 0, epoch(60))}},
			{header: []string{"X-Forwarded-For", "203.0.113.5", "X-Forwarded-For", "203.0.113.6", "True-Client-IP", "203.0.113.7"},
				want: want{status: 429, header: denied(xrl(2, 0, epoch(60)), "30", plain), body: retryIn(30)}},
			{remote: "192.0.2.2:1234", header: []string{"X-Forwarded-For", "192.0.2.1"}, want: want{status: 200, handled: true, header: xrl(2, 1, epoch(30))}},
		},
	},
	{
		name: "trusted proxies: the rightmost untrusted address is the client",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Minute}),
				ratelimit.WithKey(ratelimit.KeyByIP()), ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8"))
		},
		steps: []step{
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", "203.0.113.1"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{remote: "10.0.0.2:5000", header: []string{"X-Forwarded-For", "203.0.113.1, 10.0.0.1"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", "203.0.113.2"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			// The client's own X-Forwarded-For is left of what the proxy appends.
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", "198.51.100.9, 203.0.113.2"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			// The same in two field lines: every line counts, the last is the proxy's.
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", "198.51.100.77", "X-Forwarded-For", "203.0.113.2"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			// The same client without the proxies.
			{remote: "203.0.113.2:1234", want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			// A peer that is no trusted proxy is the client, whatever it sends.
			{remote: "192.0.2.9:5000", header: []string{"X-Forwarded-For", "203.0.113.3"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{remote: "192.0.2.9:5000", header: []string{"X-Forwarded-For", "203.0.113.4"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			// A trusted proxy's malformed header: the client cannot be told.
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", "not-an-address"}, want: want{status: 400, header: denied(nil, "", plain), body: bodyBadRequest, errs: 1,
				reported: `ratelimit: key: client IP: X-Forwarded-For entry "not-an-address" is not an IP address`, kind: "bad_request"}},
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", strings.Repeat("1", 5000)}, want: want{status: 400, header: denied(nil, "", plain), body: bodyBadRequest, errs: 2,
				reported: "header X-Forwarded-For is 5000 bytes, more than 4096", kind: "bad_request"}},
		},
	},
	{
		name: "IPv6 clients are keyed by /64, IPv4-mapped addresses as IPv4",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Minute}))
		},
		steps: []step{
			{remote: "[2001:db8:1:2::1]:1234", want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{remote: "[2001:db8:1:2:ffff::9]:1234", want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			{remote: "[2001:db8:1:3::1]:1234", want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{remote: "192.0.2.1:1234", want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{remote: "[::ffff:192.0.2.1]:1234", want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
		},
	},
	{
		// IPv6Prefix holds for clients named by the trusted proxies too, whichever option
		// comes first.
		name: "IPv6Prefix(48) behind trusted proxies",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Minute}),
				ratelimit.IPv6Prefix(48), ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8"))
		},
		steps: []step{
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", "2001:db8:1:2::1"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", "2001:db8:1:3::1"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			{remote: "[2001:db8:1:ffff::1]:1234", want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", "2001:db8:2::1"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
		},
	},
	{
		// The application limit is 100/min per IP; POST /login adds 2/min per route, shared by
		// every client. The per-route limit's headers replace the application's. A login passes
		// both guards and is one response: the observer is told of it once.
		name: "per-route limit",
		build: func(e *env) Config {
			c := opts(e.limiter(ratelimit.Policy{Name: "app", Limit: 100, Window: time.Minute}))
			c.Login = []ratelimit.Option{
				ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 2, Window: time.Minute}),
				ratelimit.WithKey(ratelimit.KeyByRoute()),
			}
			return c
		},
		steps: []step{
			{method: "POST", target: "/login", remote: "192.0.2.1:1234", want: want{status: 200, handled: true, header: xrl(2, 1, epoch(30)), result: "allowed"}},
			{method: "POST", target: "/login", remote: "192.0.2.2:1234", want: want{status: 200, handled: true, header: xrl(2, 0, epoch(60)), result: "allowed"}},
			{method: "POST", target: "/login", remote: "192.0.2.3:1234", want: want{status: 429, header: denied(xrl(2, 0, epoch(60)), "30", plain), body: retryIn(30), result: "denied"}},
			// 100/min: 600 ms apart; 192.0.2.1 has made two requests.
			{remote: "192.0.2.1:1234", want: want{status: 200, handled: true, header: xrl(100, 98, epoch(2))}},
			{target: "/items/2", remote: "192.0.2.3:1234", want: want{status: 200, handled: true, header: xrl(100, 98, epoch(2))}},
		},
	},
	{
		// Only 401s count, 2/min: an emission interval of 30 s. X-RateLimit-Remaining counts
		// the request as charged; the refund comes after.
		name: "count by outcome",
		build: func(e *env) Config {
			return opts(e.limiter(ratelimit.Policy{Limit: 2, Window: time.Minute}),
				ratelimit.CountIf(func(status int) bool { return status == http.StatusUnauthorized }))
		},
		steps: []step{
			{target: "/items/1?status=200", want: want{status: 200, handled: true, header: xrl(2, 1, epoch(30))}},
			{target: "/items/1?status=401", want: want{status: 401, handled: true, header: xrl(2, 1, epoch(30))}},
			{target: "/items/1?error=401", want: want{status: 401, handled: true, header: xrl(2, 0, epoch(60))}},
			{target: "/items/1?status=200", want: want{status: 429, header: denied(xrl(2, 0, epoch(60)), "30", plain), body: retryIn(30)}}, // even a good password waits
			{advance: 30 * time.Second, target: "/items/1?status=200", want: want{status: 200, handled: true, header: xrl(2, 0, epoch(90))}},
			{target: "/items/1?error=500", want: want{status: 500, handled: true, header: xrl(2, 0, epoch(90))}},
			{target: "/items/1?error=401", want: want{status: 401, handled: true, header: xrl(2, 0, epoch(90))}},
			{target: "/items/1?status=200", want: want{status: 429, header: denied(xrl(2, 0, epoch(90)), "30", plain), body: retryIn(30)}},
		},
	},
	{
		// Charged after the response: each request holds its estimate of 20 while it runs
		// (X-RateLimit-Remaining counts it), then what its handler reported replaces it; the
		// estimate when it reported nothing, nothing for a server error, an error returned
		// included. A report above what is left is an overdraft: the next request waits for
		// the window's end.
		name: "charge after the response",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("tokens", 100, time.Minute)),
				ratelimit.WithCost(func(ratelimit.Request) int64 { return 20 }), ratelimit.ChargeAfter(cost.Reported))
		},
		steps: []step{
			{target: "/items/1?report=30", want: want{status: 200, handled: true, header: xrl(100, 80, epoch(60))}},
			{target: "/items/1?report=5", want: want{status: 200, handled: true, header: xrl(100, 50, epoch(60))}},
			{target: "/items/1", want: want{status: 200, handled: true, header: xrl(100, 45, epoch(60))}},
			{target: "/items/1?report=40&status=503", want: want{status: 503, handled: true, header: xrl(100, 25, epoch(60))}},
			{target: "/items/1?report=40&error=500", want: want{status: 500, handled: true, header: xrl(100, 25, epoch(60))}},
			{target: "/items/1?report=200", want: want{status: 200, handled: true, header: xrl(100, 25, epoch(60))}},
			{target: "/items/1", want: want{status: 429, header: denied(xrl(100, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			{advance: time.Minute, target: "/items/1", want: want{status: 200, handled: true, header: xrl(100, 80, epoch(120))}},
		},
	},
	{
		// Charged the bytes of the body: "ok" is 2.
		name: "charge the bytes written",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("bytes", 100, time.Minute)),
				ratelimit.WithCost(func(ratelimit.Request) int64 { return 20 }), ratelimit.ChargeAfter(cost.Written))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(100, 80, epoch(60))}},
			{want: want{status: 200, handled: true, header: xrl(100, 78, epoch(60))}},
			{want: want{status: 200, handled: true, header: xrl(100, 76, epoch(60))}},
		},
	},
	{
		// Each request gets the policies of its plan (X-Plan), keyed by its API key; a request
		// without a known plan gets the limiter's own.
		name: "tiers",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("anonymous", 2, time.Minute)),
				ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
				ratelimit.WithResolver(ratelimit.Resolver{Tier: func(r ratelimit.Request) string { return r.Header("X-Plan") }, Tiers: map[string][]ratelimit.Policy{
					"free": {fixed("free", 1, time.Minute)},
					"pro":  {fixed("pro", 3, time.Minute), fixed("pro-hourly", 100, time.Hour)},
				}}))
		},
		steps: []step{
			{header: []string{"X-API-Key", "a", "X-Plan", "free"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{header: []string{"X-API-Key", "a", "X-Plan", "free"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			{header: []string{"X-API-Key", "b", "X-Plan", "pro"}, want: want{status: 200, handled: true, header: xrl(3, 2, epoch(60))}},
			{header: []string{"X-API-Key", "c", "X-Plan", "gold"}, want: want{status: 200, handled: true, header: xrl(2, 1, epoch(60))}},
			{header: []string{"X-API-Key", "c"}, want: want{status: 200, handled: true, header: xrl(2, 0, epoch(60))}},
		},
	},
	{
		// The policies of each API key come from the application's data, cached by the guard.
		name: "resolver",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("default", 1, time.Minute)),
				ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
				ratelimit.WithResolver(ratelimit.Resolver{Resolve: func(_ ratelimit.Request, key string) ([]ratelimit.Policy, error) {
					if key == "hdr:x-api-key:gold" {
						return []ratelimit.Policy{fixed("gold", 3, time.Minute)}, nil
					}
					return nil, nil
				}}))
		},
		steps: []step{
			{header: []string{"X-API-Key", "gold"}, want: want{status: 200, handled: true, header: xrl(3, 2, epoch(60))}},
			{header: []string{"X-API-Key", "gold"}, want: want{status: 200, handled: true, header: xrl(3, 1, epoch(60))}},
			{header: []string{"X-API-Key", "lead"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{header: []string{"X-API-Key", "lead"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
		},
	},
	{
		// Every framework reads the request's host as its Host header.
		name: "key by host",
		build: func(e *env) Config {
			return opts(e.limiter(fixed("host", 1, time.Minute)), ratelimit.WithKey(ratelimit.KeyByHeader("Host")))
		},
		steps: []step{
			{target: "http://a.example/items/1", want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{target: "http://a.example/items/2", want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			{target: "http://b.example/items/1", want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
		},
	},
}, tooCostly()...)

// tooCostly returns a case per algorithm: a cost far above the capacity, up to
// math.MaxInt64, is refused for ever (429 without Retry-After), never let through, and leaves
// the quota as it was.
func tooCostly() []specCase {
	var out []specCase
	for _, c := range []struct {
		alg   algorithms.Algorithm
		first map[string]string // headers of the first request of cost 1
	}{
		{algorithms.FixedWindow{}, xrl(3, 2, epoch(60))},
		{algorithms.SlidingLog{}, xrl(3, 2, epoch(60))},
		{algorithms.SlidingCounter{}, xrl(3, 2, epoch(120))},
		{algorithms.TokenBucket{}, xrl(3, 2, epoch(20))},
		{algorithms.LeakyBucket{}, xrl(3, 2, epoch(20))},
		{algorithms.LeakyBucket{Shaping: true}, xrl(3, 2, epoch(20))},
		{algorithms.GCRA{}, xrl(3, 2, epoch(20))},
	} {
		// The headers of the untouched quota.
		refused := want{status: 429, header: denied(xrl(3, 3, epoch(0)), "", plain), body: bodyTooCostly}
		out = append(out, specCase{
			name: "a cost above the capacity is refused for ever: " + c.alg.Name(),
			build: func(e *env) Config {
				return opts(e.limiter(ratelimit.Policy{Name: "p", Limit: 3, Window: time.Minute, Algorithm: c.alg}), ratelimit.WithCost(costFromHeader))
			},
			steps: []step{
				{header: []string{"X-Cost", maxCost}, want: refused},
				{header: []string{"X-Cost", hugeCost}, want: refused},
				{header: []string{"X-Cost", "4"}, want: refused},
				{header: []string{"X-Cost", maxCost}, want: refused},
				// The quota is untouched.
				{want: want{status: 200, handled: true, header: c.first}},
			},
		})
	}
	return out
}

// threePolicies adds the IETF draft fields of the "second", "minute" and default-named hourly
// policies to h.
func threePolicies(h map[string]string, rateLimit string) map[string]string {
	h = with(h, "Ratelimit-Policy", `"second";q=1;w=1, "minute";q=2;w=60, "gcra-100-per-1h";q=100;w=3600`)
	return with(h, "Ratelimit", rateLimit)
}

// steady is the IETF draft fields of the one policy "steady", 10 per minute, and rateLimit.
func steady(rateLimit string) map[string]string {
	return with(with(nil, "Ratelimit-Policy", `"steady";q=10;w=60`), "Ratelimit", rateLimit)
}

// logged is the IETF draft fields of the one sliding log "log", 3 per minute, and rateLimit.
func logged(rateLimit string) map[string]string {
	return with(with(nil, "Ratelimit-Policy", `"log";q=3;w=60`), "Ratelimit", rateLimit)
}

// withIETF adds the IETF draft fields of the "burst" and "sustained" policies to h.
func withIETF(h map[string]string, rateLimit string) map[string]string {
	h = with(h, "Ratelimit-Policy", `"burst";q=2;w=1, "sustained";q=3;w=60`)
	return with(h, "Ratelimit", rateLimit)
}

// retryIn is the body of a denial with Retry-After n > 1.
func retryIn(n int) string {
	return "Too Many Requests: Rate limit exceeded. Retry in " + strconv.Itoa(n) + " seconds.\n"
}

// ms returns durations of the given milliseconds.
func ms(n ...int) []time.Duration {
	out := make([]time.Duration, len(n))
	for i, v := range n {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}
