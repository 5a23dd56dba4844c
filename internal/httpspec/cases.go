package httpspec

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// specCase is one scenario: how to build the application, and its requests in order.
type specCase struct {
	name  string
	build func(e *env) Config
	steps []step
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
	bodyNoKey       = "Unauthorized: the request does not identify its client.\n"
	bodyGone        = "Client Closed Request: the request was cancelled.\n"
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

// costFromHeader reads the cost of a request from its X-Cost header (default 1).
func costFromHeader(r ratelimit.Request) int64 {
	n, err := strconv.ParseInt(r.Header("X-Cost"), 10, 64)
	if err != nil {
		return 1
	}
	return n
}

// opts builds a Config of the case's limiter and options.
func opts(l *ratelimit.Limiter, o ...ratelimit.Option) Config {
	return Config{Limiter: l, Options: o}
}

var cases = []specCase{
	{
		// 2/s and 3/min, both GCRA: the per-second policy binds first, then the per-minute one.
		name: "two windows: allowed, denied, allowed again",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Limit: 2, Window: time.Second}, ratelimit.Policy{Limit: 3, Window: time.Minute}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(2, 1, epoch(1))}},
			{want: want{status: 200, handled: true, header: xrl(2, 0, epoch(1))}},
			{want: want{status: 429, header: denied(xrl(2, 0, epoch(1)), "1", plain), body: bodyRetry1}},
			{advance: time.Second, want: want{status: 200, handled: true, header: xrl(3, 0, epoch(60))}},
			{want: want{status: 429, header: denied(xrl(3, 0, epoch(60)), "19", plain),
				body: "Too Many Requests: Rate limit exceeded. Retry in 19 seconds.\n"}},
		},
	},
	{
		name: "IETF draft headers with X-RateLimit",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Name: "burst", Limit: 2, Window: time.Second}, ratelimit.Policy{Name: "sustained", Limit: 3, Window: time.Minute}),
				ratelimit.WithHeaders(ratelimit.XRateLimitHeaders|ratelimit.IETFDraftHeaders))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: withIETF(xrl(2, 1, epoch(1)), `"burst";r=1;t=1`)}},
			{want: want{status: 200, handled: true, header: withIETF(xrl(2, 0, epoch(1)), `"burst";r=0;t=1`)}},
			{want: want{status: 429, header: denied(withIETF(xrl(2, 0, epoch(1)), `"burst";r=0;t=1`), "1", plain), body: bodyRetry1}},
		},
	},
	{
		name: "IETF draft headers only",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Name: "burst", Limit: 2, Window: time.Second}, ratelimit.Policy{Name: "sustained", Limit: 3, Window: time.Minute}),
				ratelimit.WithHeaders(ratelimit.IETFDraftHeaders))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: withIETF(nil, `"burst";r=1;t=1`)}},
			{want: want{status: 200, handled: true, header: withIETF(nil, `"burst";r=0;t=1`)}},
			{want: want{status: 429, header: denied(withIETF(nil, `"burst";r=0;t=1`), "1", plain), body: bodyRetry1}},
		},
	},
	{
		name: "no rate-limit headers, Retry-After all the same",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.WithHeaders())
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: map[string]string{}}},
			{want: want{status: 429, header: denied(nil, "1", plain), body: bodyRetry1}},
		},
	},
	{
		name: "problem JSON",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Name: "burst", Limit: 1, Window: time.Second}), ratelimit.WithProblemJSON())
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(1, 0, epoch(1))}},
			{want: want{status: 429, header: denied(xrl(1, 0, epoch(1)), "1", problem),
				body: `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",` +
					`"title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,` +
					`"detail":"Rate limit exceeded. Retry in 1 second.","violated-policies":["burst"]}` + "\n"}},
		},
	},
	{
		name: "deny response of the application",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Limit: 1, Window: time.Second}),
				ratelimit.WithDenyResponse(func(r ratelimit.Request, d ratelimit.Decision) (int, string, []byte) {
					return http.StatusServiceUnavailable, "application/json", []byte(`{"error":"slow down"}`)
				}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(1, 0, epoch(1))}},
			{want: want{status: 503, header: denied(xrl(1, 0, epoch(1)), "1", "application/json"), body: `{"error":"slow down"}`}},
		},
	},
	{
		// 3/min: an emission interval of 20 s.
		name: "cost per request, free and too costly requests",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Limit: 3, Window: time.Minute}), ratelimit.WithCost(costFromHeader))
		},
		steps: []step{
			{header: []string{"X-Cost", "2"}, want: want{status: 200, handled: true, header: xrl(3, 1, epoch(40))}},
			{header: []string{"X-Cost", "0"}, want: want{status: 200, handled: true, header: xrl(3, 1, epoch(40))}},
			{header: []string{"X-Cost", "5"}, want: want{status: 429, header: denied(xrl(3, 1, epoch(40)), "", plain), body: bodyTooCostly}},
			{want: want{status: 200, handled: true, header: xrl(3, 0, epoch(60))}},
		},
	},
	{
		name: "skipped requests are neither checked nor charged",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Limit: 1, Window: time.Second}),
				ratelimit.WithSkip(func(r ratelimit.Request) bool { return r.Path() == "/health" }))
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
		name: "fail open (default): store down",
		build: func(e *env) Config {
			return opts(e.limiter(brokenStore{}, ratelimit.Policy{Limit: 1, Window: time.Second}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, errs: 1}},
			{want: want{status: 200, handled: true, errs: 2}},
		},
	},
	{
		name: "fail open: store does not answer in time",
		build: func(e *env) Config {
			return opts(e.limiter(slowStore{}, ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.WithTimeout(time.Millisecond))
		},
		steps: []step{
			{want: want{status: 200, handled: true, errs: 1}},
		},
	},
	{
		name: "fail closed 503: store down",
		build: func(e *env) Config {
			return opts(e.limiter(brokenStore{}, ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.FailClosed(503))
		},
		steps: []step{
			{want: want{status: 503, header: denied(nil, "1", plain), body: bodyUnavailable, errs: 1}},
		},
	},
	{
		name: "fail closed 429: store does not answer in time, problem JSON",
		build: func(e *env) Config {
			return opts(e.limiter(slowStore{}, ratelimit.Policy{Limit: 1, Window: time.Second}),
				ratelimit.FailClosed(429), ratelimit.WithTimeout(time.Millisecond), ratelimit.WithProblemJSON())
		},
		steps: []step{
			{want: want{status: 429, header: denied(nil, "1", problem), errs: 1,
				body: `{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Retry in 1 second."}` + "\n"}},
		},
	},
	{
		name: "fail closed 429: store down",
		build: func(e *env) Config {
			return opts(e.limiter(brokenStore{}, ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.FailClosed(429))
		},
		steps: []step{
			{want: want{status: 429, header: denied(nil, "1", plain), body: bodyFailed429, errs: 1}},
		},
	},
	{
		// Shaping at 2/s: one slot every 500 ms, two queued at most.
		name: "shaping: requests wait for their slot",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Limit: 2, Window: time.Second, Algorithm: algorithms.LeakyBucket{Shaping: true}}))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(2, 1, epoch(1))}},
			{want: want{status: 200, handled: true, header: xrl(2, 0, epoch(1)), waits: ms(500)}},
			{want: want{status: 429, header: denied(xrl(2, 0, epoch(1)), "1", plain), body: bodyRetry1, waits: ms(500)}},
			{advance: 500 * time.Millisecond, cancelWait: true,
				want: want{status: 499, header: denied(nil, "", plain), body: bodyGone, waits: ms(500, 500)}},
		},
	},
	{
		name: "missing key refused",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Limit: 1, Window: time.Second}),
				ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.RejectMissingKey(401))
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
			c := opts(e.limiter(nil, ratelimit.Policy{Limit: 1, Window: time.Second}),
				ratelimit.WithKey(ratelimit.KeyByUser(UserKey)), ratelimit.RejectMissingKey(401))
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
			return opts(e.limiter(nil, ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")))
		},
		steps: []step{
			{want: want{status: 200, handled: true, header: xrl(1, 0, epoch(1))}},
			{want: want{status: 429, header: denied(xrl(1, 0, epoch(1)), "1", plain), body: bodyRetry1}},
			{header: []string{"X-API-Key", "k1"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(1))}},
		},
	},
	{
		name: "key longer than MaxKeyBytes is a bad request",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")))
		},
		steps: []step{
			{header: []string{"X-API-Key", strings.Repeat("k", 4097)},
				want: want{status: 400, header: denied(nil, "", plain), body: bodyBadRequest, errs: 1}},
		},
	},
	{
		name: "spoofed forwarding headers give no new quota",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Limit: 2, Window: time.Minute}))
		},
		steps: []step{
			{header: []string{"X-Forwarded-For", "203.0.113.1"}, want: want{status: 200, handled: true, header: xrl(2, 1, epoch(30))}},
			{header: []string{"X-Forwarded-For", "203.0.113.2", "X-Real-IP", "203.0.113.3", "Forwarded", "for=203.0.113.4"},
				want: want{status: 200, handled: true, header: xrl(2, 0, epoch(60))}},
			{header: []string{"X-Forwarded-For", "203.0.113.5", "X-Forwarded-For", "203.0.113.6", "True-Client-IP", "203.0.113.7"},
				want: want{status: 429, header: denied(xrl(2, 0, epoch(60)), "30", plain), body: "Too Many Requests: Rate limit exceeded. Retry in 30 seconds.\n"}},
			{remote: "192.0.2.2:1234", header: []string{"X-Forwarded-For", "192.0.2.1"}, want: want{status: 200, handled: true, header: xrl(2, 1, epoch(30))}},
		},
	},
	{
		name: "trusted proxies: the rightmost untrusted address is the client",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Limit: 1, Window: time.Minute}), ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8"))
		},
		steps: []step{
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", "203.0.113.1"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{remote: "10.0.0.2:5000", header: []string{"X-Forwarded-For", "203.0.113.1, 10.0.0.1"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", "203.0.113.2"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			// The client's own X-Forwarded-For is left of what the proxy appends.
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", "198.51.100.9, 203.0.113.2"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			// The same in two field lines: every line counts, the last is the proxy's.
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", "198.51.100.77", "X-Forwarded-For", "203.0.113.2"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			// A peer that is no trusted proxy is the client, whatever it sends.
			{remote: "192.0.2.9:5000", header: []string{"X-Forwarded-For", "203.0.113.3"}, want: want{status: 200, handled: true, header: xrl(1, 0, epoch(60))}},
			{remote: "192.0.2.9:5000", header: []string{"X-Forwarded-For", "203.0.113.4"}, want: want{status: 429, header: denied(xrl(1, 0, epoch(60)), "60", plain), body: retryIn(60)}},
			// A trusted proxy's malformed header: the client cannot be told.
			{remote: "10.0.0.1:5000", header: []string{"X-Forwarded-For", "not-an-address"}, want: want{status: 400, header: denied(nil, "", plain), body: bodyBadRequest, errs: 1}},
		},
	},
	{
		name: "IPv6 clients are keyed by /64, IPv4-mapped addresses as IPv4",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Limit: 1, Window: time.Minute}))
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
		// The application limit is 100/min per IP; POST /login adds 2/min per route, shared by
		// every client. The per-route limit's headers replace the application's.
		name: "per-route limit",
		build: func(e *env) Config {
			c := opts(e.limiter(nil, ratelimit.Policy{Name: "app", Limit: 100, Window: time.Minute}))
			c.Login = []ratelimit.Option{
				ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 2, Window: time.Minute}),
				ratelimit.WithKey(ratelimit.KeyByRoute()),
			}
			return c
		},
		steps: []step{
			{method: "POST", target: "/login", remote: "192.0.2.1:1234", want: want{status: 200, handled: true, header: xrl(2, 1, epoch(30))}},
			{method: "POST", target: "/login", remote: "192.0.2.2:1234", want: want{status: 200, handled: true, header: xrl(2, 0, epoch(60))}},
			{method: "POST", target: "/login", remote: "192.0.2.3:1234", want: want{status: 429, header: denied(xrl(2, 0, epoch(60)), "30", plain), body: retryIn(30)}},
			// 100/min: 600 ms apart; 192.0.2.1 has made two requests.
			{remote: "192.0.2.1:1234", want: want{status: 200, handled: true, header: xrl(100, 98, epoch(2))}},
			{target: "/items/2", remote: "192.0.2.3:1234", want: want{status: 200, handled: true, header: xrl(100, 98, epoch(2))}},
		},
	},
	{
		// Only 401s count, 2/min: an emission interval of 30 s.
		name: "count by outcome",
		build: func(e *env) Config {
			return opts(e.limiter(nil, ratelimit.Policy{Limit: 2, Window: time.Minute}),
				ratelimit.CountIf(func(status int) bool { return status == http.StatusUnauthorized }))
		},
		steps: []step{
			{target: "/items/1?status=200", want: want{status: 200, handled: true, header: xrl(2, 1, epoch(30))}},
			{target: "/items/1?status=401", want: want{status: 401, handled: true, header: xrl(2, 1, epoch(30))}},
			{target: "/items/1?error=401", want: want{status: 401, handled: true, header: xrl(2, 0, epoch(60))}},
			{target: "/items/1?status=200", want: want{status: 429, header: denied(xrl(2, 0, epoch(60)), "30", plain), body: retryIn(30)}},
			{advance: 30 * time.Second, target: "/items/1?status=200", want: want{status: 200, handled: true, header: xrl(2, 0, epoch(90))}},
			{target: "/items/1?error=500", want: want{status: 500, handled: true, header: xrl(2, 0, epoch(90))}},
			{target: "/items/1?error=401", want: want{status: 401, handled: true, header: xrl(2, 0, epoch(90))}},
			{target: "/items/1?status=200", want: want{status: 429, header: denied(xrl(2, 0, epoch(90)), "30", plain), body: retryIn(30)}},
		},
	},
}

// withIETF adds the IETF draft fields of the "burst" and "sustained" policies to h.
func withIETF(h map[string]string, rateLimit string) map[string]string {
	out := map[string]string{
		"Ratelimit-Policy": `"burst";q=2;w=1, "sustained";q=3;w=60`,
		"Ratelimit":        rateLimit,
	}
	for k, v := range h {
		out[k] = v
	}
	return out
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
