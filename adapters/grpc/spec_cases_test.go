package grpclimit_test

import (
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/grpc"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// The status messages of the guard's refusals: the bodies of the HTTP spec table, without
// their final newline.
const (
	msgRetry1      = "Too Many Requests: Rate limit exceeded. Retry in 1 second."
	msgTooCostly   = "Too Many Requests: This request costs more than the rate limit allows; it cannot be admitted."
	msgUnavailable = "Service Unavailable: the service is temporarily unavailable. Retry in 1 second."
	msgFailed429   = "Too Many Requests: Retry in 1 second."
	msgBadRequest  = "Bad Request: the request's client could not be identified."
	msgBadCost     = "Bad Request: the request's cost is invalid."
	msgNoKey       = "Unauthorized: the request does not identify its client."
	msgGone        = "Client Closed Request: the request was cancelled."
)

// retryIn is the message of a denial with Retry-After n > 1.
func retryIn(n int) string {
	return "Too Many Requests: Rate limit exceeded. Retry in " + strconv.Itoa(n) + " seconds."
}

// epoch returns the Unix time T0+sec as a header value.
func epoch(sec int64) string { return strconv.FormatInt(fakeclock.T0.Unix()+sec, 10) }

// xrl returns the X-RateLimit fields of a decided call.
func xrl(limit, remaining int64, reset string) map[string]string {
	return map[string]string{
		"x-ratelimit-limit":     strconv.FormatInt(limit, 10),
		"x-ratelimit-remaining": strconv.FormatInt(remaining, 10),
		"x-ratelimit-reset":     reset,
	}
}

// with returns h and key: value.
func with(h map[string]string, key, value string) map[string]string {
	out := map[string]string{key: value}
	for k, v := range h {
		out[k] = v
	}
	return out
}

// ok is the call the handler answered OK, with the header h.
func ok(h map[string]string) want { return want{code: codes.OK, handled: true, header: h} }

// deny is a denial: the header h and Retry-After retryAfter, a RetryInfo of retry, the message.
func deny(h map[string]string, retryAfter string, retry time.Duration, msg string) want {
	return want{code: codes.ResourceExhausted, header: with(h, "retry-after", retryAfter), retry: retry, msg: msg}
}

// refused is a refusal with code c, without fields, RetryInfo or pushback.
func refused(c codes.Code, msg string) want {
	return want{code: c, header: map[string]string{}, msg: msg}
}

// costFromHeader reads the cost of a call from its x-cost metadata (default 1).
func costFromHeader(r ratelimit.Request) int64 {
	n, err := strconv.ParseInt(r.Header("X-Cost"), 10, 64)
	if err != nil {
		return 1
	}
	return n
}

// fixed is a fixed-window policy.
func fixed(name string, limit int64, window time.Duration) ratelimit.Policy {
	return ratelimit.Policy{Name: name, Limit: limit, Window: window, Algorithm: algorithms.FixedWindow{}}
}

func opts(l *ratelimit.Limiter, o ...ratelimit.Option) config { return config{limiter: l, options: o} }

// withErrs returns w with the count of errors reported so far.
func withErrs(w want, errs int) want { w.errs = errs; return w }

// The cost of a call that costs more than any policy holds.
const maxCost = "9223372036854775807"

func specCases() []specCase {
	return append([]specCase{
		{
			// 2/s and 3/min, both GCRA. RetryInfo is exact: 500 ms where Retry-After says 1.
			name: "two windows: allowed, denied, allowed again",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 2, Window: time.Second}, ratelimit.Policy{Limit: 3, Window: time.Minute}))
			},
			steps: []step{
				{want: ok(xrl(2, 1, epoch(1)))},
				{want: ok(xrl(2, 0, epoch(1)))},
				{want: deny(xrl(2, 0, epoch(1)), "1", 500*time.Millisecond, msgRetry1)},
				{advance: time.Second, want: ok(xrl(3, 0, epoch(60)))},
				{want: deny(xrl(3, 0, epoch(60)), "19", 19*time.Second, retryIn(19))},
			},
		},
		{
			name:  "fixed window: fields on admitted and denied calls",
			build: func(e *env) config { return opts(e.limiter(fixed("minute", 3, time.Minute))) },
			steps: []step{
				{want: ok(xrl(3, 2, epoch(60)))},
				{want: ok(xrl(3, 1, epoch(60)))},
				{want: ok(xrl(3, 0, epoch(60)))},
				{want: deny(xrl(3, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				{advance: time.Minute, want: ok(xrl(3, 2, epoch(120)))},
			},
		},
		{
			name:  "Retry-After rounds up, RetryInfo is exact",
			build: func(e *env) config { return opts(e.limiter(fixed("minute", 1, time.Minute))) },
			steps: []step{
				{advance: 500 * time.Millisecond, want: ok(xrl(1, 0, epoch(60)))},
				{want: deny(xrl(1, 0, epoch(60)), "60", 59500*time.Millisecond, retryIn(60))},
				{advance: 59 * time.Second, want: deny(xrl(1, 0, epoch(60)), "1", 500*time.Millisecond, msgRetry1)},
				{advance: time.Second, want: ok(xrl(1, 0, epoch(120)))},
			},
		},
		{
			// One every 1.5 s.
			name: "RetryInfo of GCRA",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Name: "gcra", Limit: 2, Window: 3 * time.Second}))
			},
			steps: []step{
				{want: ok(xrl(2, 1, epoch(2)))},
				{want: ok(xrl(2, 0, epoch(3)))},
				{want: deny(xrl(2, 0, epoch(3)), "2", 1500*time.Millisecond, retryIn(2))},
				{advance: time.Second, want: deny(xrl(2, 0, epoch(3)), "1", 500*time.Millisecond, msgRetry1)},
				{advance: time.Second, want: ok(xrl(2, 0, epoch(5)))},
			},
		},
		{
			// The wait is 5.333334 s, then 0.333334 s: RetryInfo rounds it up to the millisecond.
			name: "RetryInfo of a sliding counter, rounded up to the millisecond",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Name: "counter", Limit: 4, Window: 4 * time.Second, Algorithm: algorithms.SlidingCounter{}}),
					ratelimit.WithCost(costFromHeader))
			},
			steps: []step{
				{md: []string{"x-cost", "3"}, want: ok(xrl(4, 1, epoch(8)))},
				{md: []string{"x-cost", "2"}, want: deny(xrl(4, 1, epoch(8)), "6", 5334*time.Millisecond, retryIn(6))},
				{advance: 5 * time.Second, md: []string{"x-cost", "2"}, want: deny(xrl(4, 1, epoch(8)), "1", 334*time.Millisecond, msgRetry1)},
				{advance: time.Second, md: []string{"x-cost", "2"}, want: ok(xrl(4, 0, epoch(12)))},
			},
		},
		{
			name: "the binding policy: least remaining, else the longest wait",
			build: func(e *env) config {
				return opts(e.limiter(fixed("second", 1, time.Second), fixed("minute", 2, time.Minute)))
			},
			steps: []step{
				{want: ok(xrl(1, 0, epoch(1)))},
				{want: deny(xrl(1, 0, epoch(1)), "1", time.Second, msgRetry1)},
				{advance: time.Second, want: ok(xrl(1, 0, epoch(2)))},
				{want: deny(xrl(2, 0, epoch(60)), "59", 59*time.Second, retryIn(59))},
			},
		},
		{
			name: "IETF draft fields with X-RateLimit",
			build: func(e *env) config {
				return opts(e.limiter(fixed("second", 1, time.Second), fixed("minute", 2, time.Minute), ratelimit.Policy{Limit: 100, Window: time.Hour}),
					ratelimit.WithResponse(ratelimit.Response{IETFDraft: 11}))
			},
			steps: []step{
				{want: ok(threePolicies(xrl(1, 0, epoch(1)), `"second";r=0;t=1`))},
				{advance: time.Second, want: ok(threePolicies(xrl(1, 0, epoch(2)), `"second";r=0;t=1`))},
				{want: deny(threePolicies(xrl(2, 0, epoch(60)), `"minute";r=0;t=59`), "59", 59*time.Second, retryIn(59))},
			},
		},
		{
			name: "IETF draft fields only",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Name: "burst", Limit: 2, Window: time.Second}, ratelimit.Policy{Name: "sustained", Limit: 3, Window: time.Minute}),
					ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true, IETFDraft: 11}))
			},
			steps: []step{
				{want: ok(withIETF(nil, `"burst";r=1;t=1`))},
				{want: ok(withIETF(nil, `"burst";r=0;t=1`))},
				{want: deny(withIETF(nil, `"burst";r=0;t=1`), "1", 500*time.Millisecond, msgRetry1)},
			},
		},
		{
			name: "IETF draft -11: t is the effective window (GCRA)",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Name: "steady", Limit: 10, Window: time.Minute}),
					ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true, IETFDraft: 11}))
			},
			steps: []step{
				{want: ok(steady(`"steady";r=9;t=6`))},
				{want: ok(steady(`"steady";r=8;t=6`))},
				{advance: 2 * time.Second, want: ok(steady(`"steady";r=7;t=4`))},
			},
		},
		{
			name: "IETF draft -10 on request: t is the time until the quota is reset (GCRA)",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Name: "steady", Limit: 10, Window: time.Minute}),
					ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true, IETFDraft: 10}))
			},
			steps: []step{
				{want: ok(steady(`"steady";r=9;t=6`))},
				{want: ok(steady(`"steady";r=8;t=12`))},
				{advance: 2 * time.Second, want: ok(steady(`"steady";r=7;t=16`))},
			},
		},
		{
			name: "IETF draft -11 of a sliding log",
			build: func(e *env) config {
				p := ratelimit.Policy{Name: "log", Limit: 3, Window: time.Minute, Algorithm: algorithms.SlidingLog{}}
				return opts(e.limiter(p), ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true, IETFDraft: 11}))
			},
			steps: []step{
				{want: ok(logged(`"log";r=2;t=60`))},
				{advance: 20 * time.Second, want: ok(logged(`"log";r=1;t=40`))},
				{advance: 20 * time.Second, want: ok(logged(`"log";r=0;t=20`))},
				{want: deny(logged(`"log";r=0;t=20`), "20", 20*time.Second, retryIn(20))},
			},
		},
		{
			name: "IETF draft -10 of a sliding log",
			build: func(e *env) config {
				p := ratelimit.Policy{Name: "log", Limit: 3, Window: time.Minute, Algorithm: algorithms.SlidingLog{}}
				return opts(e.limiter(p), ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true, IETFDraft: 10}))
			},
			steps: []step{
				{want: ok(logged(`"log";r=2;t=60`))},
				{advance: 20 * time.Second, want: ok(logged(`"log";r=1;t=60`))},
				{advance: 20 * time.Second, want: ok(logged(`"log";r=0;t=60`))},
				{want: deny(logged(`"log";r=0;t=60`), "20", 20*time.Second, retryIn(20))},
			},
		},
		{
			name: "shadow policies named in x-ratelimit-shadow",
			build: func(e *env) config {
				return opts(e.limiter(fixed("minute", 3, time.Minute), ratelimit.Policy{Name: "strict", Limit: 1, Window: time.Minute, Algorithm: algorithms.FixedWindow{}, Shadow: true}),
					ratelimit.WithResponse(ratelimit.Response{Shadow: true}))
			},
			steps: []step{
				{want: ok(xrl(3, 2, epoch(60)))},
				{want: ok(with(xrl(3, 1, epoch(60)), "x-ratelimit-shadow", "strict"))},
			},
		},
		{
			name: "no rate-limit fields, Retry-After and RetryInfo all the same",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.WithResponse(ratelimit.Response{NoXRateLimit: true}))
			},
			steps: []step{
				{want: ok(map[string]string{})},
				{want: deny(nil, "1", time.Second, msgRetry1)},
			},
		},
		{
			name: "problem JSON: the message is the document",
			build: func(e *env) config {
				return opts(e.limiter(fixed("second", 1, time.Second), fixed("minute", 1, time.Minute), fixed("hour", 10, time.Hour)),
					ratelimit.WithResponse(ratelimit.Response{ProblemJSON: true}))
			},
			steps: []step{
				{want: ok(xrl(1, 0, epoch(1)))},
				{want: deny(xrl(1, 0, epoch(60)), "60", time.Minute,
					`{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",`+
						`"title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,`+
						`"detail":"Rate limit exceeded. Retry in 60 seconds.","violated-policies":["second","minute"]}`)},
			},
		},
		{
			// The deny response's status (503) does not change the code: a denial is ResourceExhausted.
			name: "deny response of the application: its body is the message",
			build: func(e *env) config {
				return opts(e.limiter(fixed("minute", 1, time.Minute)),
					ratelimit.WithResponse(ratelimit.Response{Deny: func(r ratelimit.Request, d ratelimit.Decision) (int, string, []byte) {
						return 503, "application/json", []byte(`{"error":"slow down","policy":"` + d.Policy.Name + `","path":"` + r.Path() + `"}`)
					}}))
			},
			steps: []step{
				{want: ok(xrl(1, 0, epoch(60)))},
				{want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, `{"error":"slow down","policy":"minute","path":"{method}"}`)},
			},
		},
		{
			name: "deny response without a body: the status text is the message",
			build: func(e *env) config {
				return opts(e.limiter(fixed("minute", 1, time.Minute)),
					ratelimit.WithResponse(ratelimit.Response{Deny: func(ratelimit.Request, ratelimit.Decision) (int, string, []byte) { return 0, "", nil }}))
			},
			steps: []step{
				{want: ok(xrl(1, 0, epoch(60)))},
				{want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, "Too Many Requests")},
			},
		},
		{
			name: "cost: charged, 0 only reads, above capacity never admitted (pushback -1), negative a bad request",
			build: func(e *env) config {
				return opts(e.limiter(fixed("minute", 3, time.Minute)), ratelimit.WithCost(costFromHeader))
			},
			steps: []step{
				{md: []string{"x-cost", "4"}, want: want{code: codes.ResourceExhausted, header: xrl(3, 3, epoch(0)), msg: msgTooCostly, pushback: "-1"}},
				{md: []string{"x-cost", "0"}, want: ok(xrl(3, 3, epoch(0)))},
				{md: []string{"x-cost", "2"}, want: ok(xrl(3, 1, epoch(60)))},
				{md: []string{"x-cost", "2"}, want: deny(xrl(3, 1, epoch(60)), "60", time.Minute, retryIn(60))},
				{md: []string{"x-cost", "-1"}, want: want{code: codes.InvalidArgument, header: map[string]string{}, msg: msgBadCost, errs: 1,
					reported: "ratelimit: cost: the cost function returned -1; a cost cannot be negative", kind: "bad_request"}},
				{md: []string{"x-cost", "1"}, want: withErrs(ok(xrl(3, 0, epoch(60))), 1)},
			},
		},
		{
			name:  "negative cost: refused without asking the store, fail open",
			store: brokenStore{},
			build: func(e *env) config {
				return opts(e.limiter(fixed("minute", 3, time.Minute)), ratelimit.WithCost(costFromHeader), ratelimit.WithResponse(ratelimit.Response{ProblemJSON: true}))
			},
			steps: []step{
				{md: []string{"x-cost", "-9223372036854775808"}, want: want{code: codes.InvalidArgument, header: map[string]string{}, errs: 1,
					msg:      `{"type":"about:blank","title":"Bad Request","status":400,"detail":"the request's cost is invalid."}`,
					reported: "ratelimit: cost: the cost function returned -9223372036854775808; a cost cannot be negative", kind: "bad_request"}},
			},
		},
		{
			name: "skipped calls are neither checked nor charged",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}),
					ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool { return strings.HasPrefix(r.Route(), "/spec.Items/Health") }}))
			},
			steps: []step{
				{method: "Health", want: ok(map[string]string{})},
				{method: "Health", want: ok(map[string]string{})},
				{want: ok(xrl(1, 0, epoch(1)))},
				{want: deny(xrl(1, 0, epoch(1)), "1", time.Second, msgRetry1)},
				{method: "Health", want: ok(map[string]string{})},
			},
		},
		{
			name:  "allow and deny lists: by peer network, by key; deny wins; no store call",
			store: brokenStore{}, // a call the lists decide never reaches it
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}),
					ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
					ratelimit.WithAccess(ratelimit.Access{
						Allow: []string{"198.51.100.0/24"}, Deny: []string{"198.51.100.66", "2001:db8:bad::/48"},
						DenyKeys: []string{"hdr:x-api-key:revoked"},
					}))
			},
			steps: []step{
				{remote: "198.51.100.7:1", want: ok(map[string]string{})},
				{remote: "198.51.100.7:1", want: ok(map[string]string{})},
				{remote: "198.51.100.66:1", want: refused(codes.PermissionDenied, "Forbidden: access from this client is denied.")},
				{remote: "[2001:db8:bad:1::9]:1", want: refused(codes.PermissionDenied, "Forbidden: access from this client is denied.")},
				{remote: "198.51.100.8:1", md: []string{"x-api-key", "revoked"}, want: refused(codes.PermissionDenied, "Forbidden: access from this client is denied.")},
			},
		},
		{
			name:  "fail open (default): store down",
			store: brokenStore{},
			build: func(e *env) config { return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second})) },
			steps: []step{
				{want: want{code: codes.OK, handled: true, header: map[string]string{}, errs: 1, reported: "ratelimit: store: unavailable: test: the store is down", kind: "unavailable"}},
				{want: withErrs(ok(map[string]string{}), 2)},
			},
		},
		{
			name:    "fail open: store does not answer in time",
			store:   slowStore{},
			timeout: time.Millisecond,
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}))
			},
			steps: []step{
				{want: want{code: codes.OK, handled: true, header: map[string]string{}, errs: 1, reported: "(the guard's timeout is 1ms)", kind: "timeout"}},
			},
		},
		{
			name:  "fail closed 503: Unavailable with RetryInfo; a negative cost is still a bad request",
			store: brokenStore{},
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.WithResponse(ratelimit.Response{FailClosed: 503}), ratelimit.WithCost(costFromHeader))
			},
			steps: []step{
				{want: want{code: codes.Unavailable, header: map[string]string{"retry-after": "1"}, retry: time.Second, msg: msgUnavailable, errs: 1,
					reported: "ratelimit: store: unavailable: test: the store is down", kind: "unavailable"}},
				{md: []string{"x-cost", "-1"}, want: want{code: codes.InvalidArgument, header: map[string]string{}, msg: msgBadCost, errs: 2, kind: "bad_request"}},
			},
		},
		{
			name:    "fail closed 429: ResourceExhausted; store does not answer in time, problem JSON",
			store:   slowStore{},
			timeout: time.Millisecond,
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}),
					ratelimit.WithResponse(ratelimit.Response{FailClosed: 429, ProblemJSON: true}))
			},
			steps: []step{
				{want: want{code: codes.ResourceExhausted, header: map[string]string{"retry-after": "1"}, retry: time.Second, errs: 1, kind: "timeout",
					msg: `{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Retry in 1 second."}`}},
			},
		},
		{
			name:  "fail closed 429: store down",
			store: brokenStore{},
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.WithResponse(ratelimit.Response{FailClosed: 429}))
			},
			steps: []step{
				{want: want{code: codes.ResourceExhausted, header: map[string]string{"retry-after": "1"}, retry: time.Second, msg: msgFailed429, errs: 1}},
			},
		},
		{
			// Shaping at 2/s: one slot every 500 ms, two queued at most.
			name: "shaping: calls wait for their slot; a client gone while it waits is Canceled",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 2, Window: time.Second, Algorithm: algorithms.LeakyBucket{Shaping: true}}))
			},
			steps: []step{
				{want: ok(xrl(2, 1, epoch(1)))},
				{want: want{code: codes.OK, handled: true, header: xrl(2, 0, epoch(1)), waits: ms(500)}},
				{want: withWaits(deny(xrl(2, 0, epoch(1)), "1", 500*time.Millisecond, msgRetry1), ms(500))},
				{advance: 500 * time.Millisecond, cancelWait: true,
					want: want{code: codes.Canceled, header: map[string]string{}, msg: msgGone, waits: ms(500, 500)}},
			},
		},
		{
			name: "missing key refused: Unauthenticated",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}),
					ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.WithAccess(ratelimit.Access{MissingKey: 401}))
			},
			steps: []step{
				{want: refused(codes.Unauthenticated, msgNoKey)},
				{md: []string{"x-api-key", "k1"}, want: ok(xrl(1, 0, epoch(1)))},
				{md: []string{"x-api-key", "k1"}, want: deny(xrl(1, 0, epoch(1)), "1", time.Second, msgRetry1)},
				{md: []string{"x-api-key", "k2"}, want: ok(xrl(1, 0, epoch(1)))},
			},
		},
		{
			name: "missing key refused with 403: PermissionDenied",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}),
					ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.WithAccess(ratelimit.Access{MissingKey: 403}))
			},
			steps: []step{
				{want: refused(codes.PermissionDenied, "Forbidden: the request does not identify its client.")},
			},
		},
		{
			// The authentication interceptor runs first and stores the user in the context.
			name: "KeyByUser behind an authentication interceptor",
			build: func(e *env) config {
				c := opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}),
					ratelimit.WithKey(ratelimit.KeyByUser(userKey{})), ratelimit.WithAccess(ratelimit.Access{MissingKey: 401}))
				c.auth = true
				return c
			},
			steps: []step{
				{want: refused(codes.Unauthenticated, msgNoKey)},
				{md: []string{"x-user", "alice"}, want: ok(xrl(1, 0, epoch(1)))},
				{md: []string{"x-user", "alice"}, want: deny(xrl(1, 0, epoch(1)), "1", time.Second, msgRetry1)},
				{md: []string{"x-user", "bob"}, want: ok(xrl(1, 0, epoch(1)))},
			},
		},
		{
			name: "missing key falls back to the client IP",
			build: func(e *env) config {
				return opts(e.limiter(fixed("minute", 1, time.Minute)), ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")))
			},
			steps: []step{
				{want: ok(xrl(1, 0, epoch(60)))},
				{want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				{md: []string{"x-api-key", "k1"}, want: ok(xrl(1, 0, epoch(60)))},
				{remote: "192.0.2.2:1", md: []string{"x-api-key", "k1"}, want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				{remote: "192.0.2.2:1", want: ok(xrl(1, 0, epoch(60)))},
				// An API key that reads like an IP address does not share that address's quota.
				{remote: "192.0.2.3:1", md: []string{"x-api-key", "192.0.2.4"}, want: ok(xrl(1, 0, epoch(60)))},
				{remote: "192.0.2.4:1", want: ok(xrl(1, 0, epoch(60)))},
			},
		},
		{
			name: "missing key falls back to the client IP behind trusted proxies",
			build: func(e *env) config {
				return opts(e.limiter(fixed("minute", 2, time.Minute)), ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
					ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8"))
			},
			steps: []step{
				{remote: "10.0.0.1:5555", md: []string{"x-forwarded-for", "203.0.113.1, 10.0.0.2"}, want: ok(xrl(2, 1, epoch(60)))},
				{remote: "10.0.0.1:5555", md: []string{"x-forwarded-for", "203.0.113.1, 10.0.0.2"}, want: ok(xrl(2, 0, epoch(60)))},
				{remote: "10.0.0.1:5555", md: []string{"x-forwarded-for", "203.0.113.1, 10.0.0.2"}, want: deny(xrl(2, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				{remote: "10.0.0.1:5555", md: []string{"x-forwarded-for", "203.0.113.2, 10.0.0.2"}, want: ok(xrl(2, 1, epoch(60)))},
				{remote: "10.0.0.1:5555", md: []string{"x-forwarded-for", "198.51.100.7"}, want: ok(xrl(2, 1, epoch(60)))},
				{remote: "203.0.113.2:1234", want: ok(xrl(2, 0, epoch(60)))},
			},
		},
		{
			name: "KeyOr: the first key found, else the client IP",
			build: func(e *env) config {
				return opts(e.limiter(fixed("minute", 1, time.Minute)),
					ratelimit.WithKey(ratelimit.KeyOr(ratelimit.KeyByHeader("X-API-Key"), ratelimit.KeyByHeader("X-Tenant"))))
			},
			steps: []step{
				{md: []string{"x-tenant", "t1"}, want: ok(xrl(1, 0, epoch(60)))},
				{remote: "192.0.2.2:1", md: []string{"x-tenant", "t1"}, want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				{md: []string{"x-api-key", "k1", "x-tenant", "t1"}, want: ok(xrl(1, 0, epoch(60)))},
				{want: ok(xrl(1, 0, epoch(60)))},
				{want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
			},
		},
		{
			// gRPC has one quota per method with KeyByRoute: the route is the full method.
			name: "KeyByRoute: a quota per method",
			build: func(e *env) config {
				return opts(e.limiter(fixed("minute", 1, time.Minute)), ratelimit.WithKey(ratelimit.KeyByRoute()))
			},
			steps: []step{
				{want: ok(xrl(1, 0, epoch(60)))},
				{remote: "192.0.2.2:1", want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				{method: "Login", want: ok(xrl(1, 0, epoch(60)))},
			},
		},
		{
			name: "key longer than 4096 bytes: InvalidArgument",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Second}), ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")))
			},
			steps: []step{
				{md: []string{"x-api-key", strings.Repeat("k", 4097)}, want: want{code: codes.InvalidArgument, header: map[string]string{}, msg: msgBadRequest, errs: 1,
					reported: "header X-Api-Key is 4097 bytes, more than 4096", kind: "bad_request"}},
			},
		},
		{
			// Several values of a key are joined, and a comma is no identity.
			name: "repeated key metadata is a bad request, not a new quota",
			build: func(e *env) config {
				return opts(e.limiter(fixed("minute", 2, time.Minute)), ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")))
			},
			steps: []step{
				{md: []string{"x-api-key", "valid-key"}, want: ok(xrl(2, 1, epoch(60)))},
				{md: []string{"x-api-key", "valid-key", "x-api-key", "junk1"}, want: want{code: codes.InvalidArgument, header: map[string]string{}, msg: msgBadRequest, errs: 1,
					reported: "ratelimit: key: header X-Api-Key has a comma", kind: "bad_request"}},
				{md: []string{"x-api-key", "valid-key"}, want: withErrs(ok(xrl(2, 0, epoch(60))), 1)},
				{md: []string{"x-api-key", "valid-key"}, want: withErrs(deny(xrl(2, 0, epoch(60)), "60", time.Minute, retryIn(60)), 1)},
			},
		},
		{
			name:  "spoofed forwarding metadata gives no new quota",
			build: func(e *env) config { return opts(e.limiter(ratelimit.Policy{Limit: 2, Window: time.Minute})) },
			steps: []step{
				{md: []string{"x-forwarded-for", "203.0.113.1"}, want: ok(xrl(2, 1, epoch(30)))},
				{md: []string{"x-forwarded-for", "203.0.113.2", "x-real-ip", "203.0.113.3", "forwarded", "for=203.0.113.4"}, want: ok(xrl(2, 0, epoch(60)))},
				{md: []string{"x-forwarded-for", "203.0.113.5", "x-forwarded-for", "203.0.113.6", "true-client-ip", "203.0.113.7"},
					want: deny(xrl(2, 0, epoch(60)), "30", 30*time.Second, retryIn(30))},
				{remote: "192.0.2.2:1234", md: []string{"x-forwarded-for", "192.0.2.1"}, want: ok(xrl(2, 1, epoch(30)))},
			},
		},
		{
			name: "trusted proxies: the rightmost untrusted address is the client",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Minute}),
					ratelimit.WithKey(ratelimit.KeyByIP()), ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8"))
			},
			steps: []step{
				{remote: "10.0.0.1:5000", md: []string{"x-forwarded-for", "203.0.113.1"}, want: ok(xrl(1, 0, epoch(60)))},
				{remote: "10.0.0.2:5000", md: []string{"x-forwarded-for", "203.0.113.1, 10.0.0.1"}, want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				{remote: "10.0.0.1:5000", md: []string{"x-forwarded-for", "203.0.113.2"}, want: ok(xrl(1, 0, epoch(60)))},
				// The client's own x-forwarded-for is left of what the proxy appends.
				{remote: "10.0.0.1:5000", md: []string{"x-forwarded-for", "198.51.100.9, 203.0.113.2"}, want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				// The same in two values: every value counts, the last is the proxy's.
				{remote: "10.0.0.1:5000", md: []string{"x-forwarded-for", "198.51.100.77", "x-forwarded-for", "203.0.113.2"}, want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				// The same client without the proxies.
				{remote: "203.0.113.2:1234", want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				// A peer that is no trusted proxy is the client, whatever it sends.
				{remote: "192.0.2.9:5000", md: []string{"x-forwarded-for", "203.0.113.3"}, want: ok(xrl(1, 0, epoch(60)))},
				{remote: "192.0.2.9:5000", md: []string{"x-forwarded-for", "203.0.113.4"}, want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				// A trusted proxy's malformed metadata: the client cannot be told.
				{remote: "10.0.0.1:5000", md: []string{"x-forwarded-for", "not-an-address"}, want: want{code: codes.InvalidArgument, header: map[string]string{}, msg: msgBadRequest, errs: 1,
					reported: `ratelimit: key: client IP: X-Forwarded-For entry "not-an-address" is not an IP address`, kind: "bad_request"}},
				{remote: "10.0.0.1:5000", md: []string{"x-forwarded-for", strings.Repeat("1", 5000)}, want: want{code: codes.InvalidArgument, header: map[string]string{}, msg: msgBadRequest, errs: 2,
					reported: "header X-Forwarded-For is 5000 bytes, more than 4096", kind: "bad_request"}},
			},
		},
		{
			name:  "IPv6 clients are keyed by /64, IPv4-mapped addresses as IPv4",
			build: func(e *env) config { return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Minute})) },
			steps: []step{
				{remote: "[2001:db8:1:2::1]:1234", want: ok(xrl(1, 0, epoch(60)))},
				{remote: "[2001:db8:1:2:ffff::9]:1234", want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				{remote: "[2001:db8:1:3::1]:1234", want: ok(xrl(1, 0, epoch(60)))},
				{remote: "192.0.2.1:1234", want: ok(xrl(1, 0, epoch(60)))},
				{remote: "[::ffff:192.0.2.1]:1234", want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
			},
		},
		{
			name: "IPv6Prefix(48) behind trusted proxies",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 1, Window: time.Minute}),
					ratelimit.IPv6Prefix(48), ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8"))
			},
			steps: []step{
				{remote: "10.0.0.1:5000", md: []string{"x-forwarded-for", "2001:db8:1:2::1"}, want: ok(xrl(1, 0, epoch(60)))},
				{remote: "10.0.0.1:5000", md: []string{"x-forwarded-for", "2001:db8:1:3::1"}, want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				{remote: "[2001:db8:1:ffff::1]:1234", want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				{remote: "10.0.0.1:5000", md: []string{"x-forwarded-for", "2001:db8:2::1"}, want: ok(xrl(1, 0, epoch(60)))},
			},
		},
		{
			// The server's limit is 100/min per IP; Login adds 2/min per method, shared by every
			// client, in a second interceptor. Unlike HTTP, where the per-route limit's headers
			// replace the application's, each interceptor adds its fields: the outer's first.
			name: "a second interceptor for one method: both limits, both fields",
			build: func(e *env) config {
				c := opts(e.limiter(ratelimit.Policy{Name: "app", Limit: 100, Window: time.Minute}))
				c.login = []ratelimit.Option{
					ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 2, Window: time.Minute}),
					ratelimit.WithKey(ratelimit.KeyByRoute()),
				}
				return c
			},
			steps: []step{
				{method: "Login", remote: "192.0.2.1:1234", want: ok(both(xrl(100, 99, epoch(1)), xrl(2, 1, epoch(30))))},
				{method: "Login", remote: "192.0.2.2:1234", want: ok(both(xrl(100, 99, epoch(1)), xrl(2, 0, epoch(60))))},
				{method: "Login", remote: "192.0.2.3:1234", want: deny(both(xrl(100, 99, epoch(1)), xrl(2, 0, epoch(60))), "30", 30*time.Second, retryIn(30))},
				// 100/min: 600 ms apart; 192.0.2.1 has made two calls.
				{remote: "192.0.2.1:1234", want: ok(xrl(100, 98, epoch(2)))},
				{remote: "192.0.2.3:1234", want: ok(xrl(100, 98, epoch(2)))},
			},
		},
		{
			// Only Unauthenticated counts, 2/min: an emission interval of 30 s. CountIf sees the
			// HTTP status of the handler's code.
			name: "count by outcome",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Limit: 2, Window: time.Minute}),
					ratelimit.CountIf(func(status int) bool { return status == grpclimit.HTTPStatus(codes.Unauthenticated) }))
			},
			steps: []step{
				{want: ok(xrl(2, 1, epoch(30)))},
				{reply: "Unauthenticated", want: want{code: codes.Unauthenticated, handled: true, header: xrl(2, 1, epoch(30))}},
				{reply: "Unauthenticated", want: want{code: codes.Unauthenticated, handled: true, header: xrl(2, 0, epoch(60))}},
				{want: deny(xrl(2, 0, epoch(60)), "30", 30*time.Second, retryIn(30))}, // even a good password waits
				{advance: 30 * time.Second, want: ok(xrl(2, 0, epoch(90)))},
				{reply: "Internal", want: want{code: codes.Internal, handled: true, header: xrl(2, 0, epoch(90))}},
				{reply: "Unauthenticated", want: want{code: codes.Unauthenticated, handled: true, header: xrl(2, 0, epoch(90))}},
				{want: deny(xrl(2, 0, epoch(90)), "30", 30*time.Second, retryIn(30))},
			},
		},
		{
			// With one slot, a call holds it only while it runs: every call in turn is served,
			// also one whose handler fails; a slot that leaked would refuse the next.
			name: "in-flight: the slot comes back when the handler returns",
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Name: "calls", Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}}))
			},
			steps: []step{
				{want: ok(xrl(1, 0, epoch(60)))},
				{reply: "Internal", want: want{code: codes.Internal, handled: true, header: xrl(1, 0, epoch(60))}},
				{want: ok(xrl(1, 0, epoch(60)))},
				{reply: "Unavailable", want: want{code: codes.Unavailable, handled: true, header: xrl(1, 0, epoch(60))}},
				{want: ok(xrl(1, 0, epoch(60)))},
			},
		},
		{
			// Each call gets the policies of its plan (x-plan), keyed by its API key; a call
			// without a known plan gets the limiter's own.
			name: "tiers",
			build: func(e *env) config {
				return opts(e.limiter(fixed("anonymous", 2, time.Minute)),
					ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
					ratelimit.WithResolver(ratelimit.Resolver{Tier: func(r ratelimit.Request) string { return r.Header("X-Plan") }, Tiers: map[string][]ratelimit.Policy{
						"free": {fixed("free", 1, time.Minute)},
						"pro":  {fixed("pro", 3, time.Minute), fixed("pro-hourly", 100, time.Hour)},
					}}))
			},
			steps: []step{
				{md: []string{"x-api-key", "a", "x-plan", "free"}, want: ok(xrl(1, 0, epoch(60)))},
				{md: []string{"x-api-key", "a", "x-plan", "free"}, want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				{md: []string{"x-api-key", "b", "x-plan", "pro"}, want: ok(xrl(3, 2, epoch(60)))},
				{md: []string{"x-api-key", "c", "x-plan", "gold"}, want: ok(xrl(2, 1, epoch(60)))},
				{md: []string{"x-api-key", "c"}, want: ok(xrl(2, 0, epoch(60)))},
			},
		},
		{
			name: "resolver",
			build: func(e *env) config {
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
				{md: []string{"x-api-key", "gold"}, want: ok(xrl(3, 2, epoch(60)))},
				{md: []string{"x-api-key", "gold"}, want: ok(xrl(3, 1, epoch(60)))},
				{md: []string{"x-api-key", "lead"}, want: ok(xrl(1, 0, epoch(60)))},
				{md: []string{"x-api-key", "lead"}, want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
			},
		},
		{
			// The Host header of a gRPC call is its :authority.
			name: "key by host: the :authority",
			build: func(e *env) config {
				return opts(e.limiter(fixed("host", 1, time.Minute)), ratelimit.WithKey(ratelimit.KeyByHeader("Host")))
			},
			steps: []step{
				{authority: "a.example", want: ok(xrl(1, 0, epoch(60)))},
				{authority: "a.example", remote: "192.0.2.2:1", want: deny(xrl(1, 0, epoch(60)), "60", time.Minute, retryIn(60))},
				{authority: "b.example", want: ok(xrl(1, 0, epoch(60)))},
			},
		},
	}, tooCostly()...)
}

// tooCostly returns a case per algorithm: a cost far above the capacity is refused for ever
// (ResourceExhausted, no RetryInfo, pushback -1) and leaves the quota as it was.
func tooCostly() []specCase {
	var out []specCase
	for _, c := range []struct {
		alg   algorithms.Algorithm
		first map[string]string // fields of the first call of cost 1
	}{
		{algorithms.FixedWindow{}, xrl(3, 2, epoch(60))},
		{algorithms.SlidingLog{}, xrl(3, 2, epoch(60))},
		{algorithms.SlidingCounter{}, xrl(3, 2, epoch(120))},
		{algorithms.TokenBucket{}, xrl(3, 2, epoch(20))},
		{algorithms.LeakyBucket{}, xrl(3, 2, epoch(20))},
		{algorithms.LeakyBucket{Shaping: true}, xrl(3, 2, epoch(20))},
		{algorithms.GCRA{}, xrl(3, 2, epoch(20))},
	} {
		never := want{code: codes.ResourceExhausted, header: xrl(3, 3, epoch(0)), msg: msgTooCostly, pushback: "-1"}
		out = append(out, specCase{
			name: "a cost above the capacity is refused for ever: " + c.alg.Name(),
			build: func(e *env) config {
				return opts(e.limiter(ratelimit.Policy{Name: "p", Limit: 3, Window: time.Minute, Algorithm: c.alg}), ratelimit.WithCost(costFromHeader))
			},
			steps: []step{
				{md: []string{"x-cost", maxCost}, want: never},
				{md: []string{"x-cost", "4"}, want: never},
				{want: ok(c.first)},
			},
		})
	}
	return out
}

// threePolicies adds the IETF draft fields of the "second", "minute" and default-named hourly
// policies to h.
func threePolicies(h map[string]string, rateLimit string) map[string]string {
	h = with(h, "ratelimit-policy", `"second";q=1;w=1, "minute";q=2;w=60, "gcra-100-per-1h";q=100;w=3600`)
	return with(h, "ratelimit", rateLimit)
}

// steady is the IETF draft fields of the one policy "steady", 10 per minute, and rateLimit.
func steady(rateLimit string) map[string]string {
	return with(with(nil, "ratelimit-policy", `"steady";q=10;w=60`), "ratelimit", rateLimit)
}

// logged is the IETF draft fields of the one sliding log "log", 3 per minute, and rateLimit.
func logged(rateLimit string) map[string]string {
	return with(with(nil, "ratelimit-policy", `"log";q=3;w=60`), "ratelimit", rateLimit)
}

// withIETF adds the IETF draft fields of the "burst" and "sustained" policies to h.
func withIETF(h map[string]string, rateLimit string) map[string]string {
	h = with(h, "ratelimit-policy", `"burst";q=2;w=1, "sustained";q=3;w=60`)
	return with(h, "ratelimit", rateLimit)
}

// both returns the fields of two interceptors on one call: each key with the outer's value,
// then the inner's.
func both(outer, inner map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range outer {
		out[k] = v + ", " + inner[k]
	}
	return out
}

// withWaits returns w with the shaping waits so far.
func withWaits(w want, waits []time.Duration) want { w.waits = waits; return w }

// ms returns durations of the given milliseconds.
func ms(n ...int) []time.Duration {
	out := make([]time.Duration, len(n))
	for i, v := range n {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}
