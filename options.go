package ratelimit

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Option configures a [Guard], and so [Middleware] and the framework adapters. When an
// option is given twice, the last one wins.
type Option func(*config)

// DefaultTimeout bounds every store call of a [Guard] unless [WithTimeout] says otherwise.
const DefaultTimeout = 100 * time.Millisecond

type config struct {
	policies      []Policy
	key           KeyFunc
	fallback      KeyFunc // nil: KeyByIP(), unless missingStatus is set
	cost          func(Request) int64
	failStatus    int // 0: fail open
	timeout       time.Duration
	onError       func(Request, error)
	deny          func(Request, Decision) (int, string, []byte)
	headers       HeaderStyle
	problem       bool
	skip          func(Request) bool
	missingStatus int // 0: fall back to fallback
	countIf       func(status int) bool
	now           func() time.Time
	wait          func(ctx context.Context, d time.Duration) error
	errs          []error
}

func (c *config) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// WithPolicies replaces the limiter's policies with these, over the limiter's store: the
// per-route limit.
//
//	mux.Handle("POST /login", ratelimit.Middleware(l, ratelimit.WithPolicies(ratelimit.PerMinute(5)))(login))
//
// Policies of different routes that share a name and parameters share their quota; name them
// apart (see [Policy.Named]) to keep them separate.
func WithPolicies(policies ...Policy) Option {
	return func(c *config) {
		if len(policies) == 0 {
			c.errorf("WithPolicies(): give it at least one policy")
			return
		}
		c.policies = append([]Policy(nil), policies...)
	}
}

// WithKey sets what requests are limited by (default [KeyByIP]() — the connection's address).
//
// A request for which key finds no key ([ErrNoKey]: no API key header, an anonymous user, a
// route [KeyByRoute] does not know) is limited by the fallback key instead, which by default
// is KeyByIP() with no options: the address of the connection's peer, not the client behind
// a proxy. Behind reverse proxies, that is the proxy's address, and every such request of
// every client shares the proxy's one quota. So behind proxies, set the fallback too, with
// the same proxies:
//
//	ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(ratelimit.TrustProxies("10.0.0.0/8")), ratelimit.KeyByRoute())),
//	ratelimit.WithFallbackKey(ratelimit.KeyByIP(ratelimit.TrustProxies("10.0.0.0/8"))),
//
// or refuse such requests with [RejectMissingKey].
func WithKey(key KeyFunc) Option {
	return func(c *config) {
		if key == nil {
			c.errorf("WithKey(nil): give it a key function, e.g. ratelimit.KeyByIP()")
			return
		}
		c.key = key
	}
}

// RejectMissingKey answers status (for example 401 Unauthorized, or 400 Bad Request) when the
// key function finds no key ([ErrNoKey]). By default such a request is limited by the
// fallback key instead, under the same policies: the connection's IP address unless
// [WithFallbackKey] says otherwise. Behind reverse proxies the connection's address is the
// proxy's, shared by every client, so there either reject such requests with RejectMissingKey
// or set WithFallbackKey([KeyByIP]([TrustProxies](...))). RejectMissingKey cannot be combined
// with WithFallbackKey.
func RejectMissingKey(status int) Option {
	return func(c *config) {
		if status < 400 || status > 499 {
			c.errorf("RejectMissingKey(%d): the status must be a 4xx client error, e.g. 401", status)
			return
		}
		c.missingStatus = status
	}
}

// WithFallbackKey sets the key of requests whose key function finds no key ([ErrNoKey]);
// default [KeyByIP](), the connection's address. Behind reverse proxies, give it the proxies,
// as to the key function:
//
//	ratelimit.WithFallbackKey(ratelimit.KeyByIP(ratelimit.TrustProxies("10.0.0.0/8")))
//
// otherwise every request without a key is limited by the proxy's address, and all clients
// share one quota. A request for which fn finds no key either is answered 400 Bad Request, and
// the error goes to the error handler. WithFallbackKey cannot be combined with
// [RejectMissingKey], which refuses such requests instead.
func WithFallbackKey(fn KeyFunc) Option {
	return func(c *config) {
		if fn == nil {
			c.errorf("WithFallbackKey(nil): give it a key function, e.g. ratelimit.KeyByIP(ratelimit.TrustProxies(...))")
			return
		}
		c.fallback = fn
	}
}

// WithCost sets the cost of each request (default 1): a bulk endpoint can charge for each item.
// A cost of 0 charges nothing; a cost above a policy's capacity, however large, is refused with
// 429 and no Retry-After, since waiting would not help. A negative cost is a malformed
// request: it is answered 400 Bad Request without asking the store, and the error goes to the
// error handler (see [WithErrorHandler]), whatever the fail mode; it is never let through.
func WithCost(cost func(Request) int64) Option {
	return func(c *config) {
		if cost == nil {
			c.errorf("WithCost(nil): give it a function")
			return
		}
		c.cost = cost
	}
}

// FailOpen lets requests through when the store fails or does not answer in time, and
// reports the error to the error handler (see [WithErrorHandler]). It is the default: an
// outage of the rate limiter does not become an outage of the service.
func FailOpen() Option {
	return func(c *config) { c.failStatus = 0 }
}

// FailClosed answers status, 503 Service Unavailable or 429 Too Many Requests, with
// Retry-After: 1, when the store fails or does not answer in time. Use it where an
// unlimited request costs more than a refused one (logins, expensive calls). The error goes
// to the error handler as well.
func FailClosed(status int) Option {
	return func(c *config) {
		if status != http.StatusServiceUnavailable && status != http.StatusTooManyRequests {
			c.errorf("FailClosed(%d): the status must be 503 or 429", status)
			return
		}
		c.failStatus = status
	}
}

// WithTimeout bounds every store call (default [DefaultTimeout], 100 ms); past it, the call
// counts as failed (see [FailOpen]). The guard enforces the deadline itself, even with a
// store client that ignores its context. The memory store never waits on I/O and is not
// timed.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errorf("WithTimeout(%v): the timeout must be positive", d)
			return
		}
		c.timeout = d
	}
}

// WithErrorHandler sets the function told about every error the guard meets: a store error or
// timeout (the request then fails open or closed), a key function's error or a negative cost
// (the request is answered 400 Bad Request), an error refunding after the handler ([CountIf]).
// Errors wrap the cause with %w. It is called on the request's goroutine and must be quick.
//
// By default errors are logged with [log/slog] at warning level, at most once a second per
// guard, with the number of errors not logged since.
func WithErrorHandler(f func(r Request, err error)) Option {
	return func(c *config) {
		if f == nil {
			c.errorf("WithErrorHandler(nil): give it a function")
			return
		}
		c.onError = f
	}
}

// WithDenyResponse replaces the response to a request the limiter denies. f returns the
// status (0 means 429), the content type and the body; the guard still writes the rate-limit
// headers and Retry-After. It is not called for the other refusals (store failure, missing
// key, malformed request).
func WithDenyResponse(f func(r Request, d Decision) (status int, contentType string, body []byte)) Option {
	return func(c *config) {
		if f == nil {
			c.errorf("WithDenyResponse(nil): give it a function")
			return
		}
		c.deny = f
	}
}

// WithHeaders selects the rate-limit headers written on every limited response (default
// [HeadersXRateLimit]). Retry-After is written on every 429 and 503 regardless.
func WithHeaders(style HeaderStyle) Option {
	return func(c *config) {
		if style&^(HeadersXRateLimit|HeadersIETFDraft) != 0 {
			c.errorf("WithHeaders(%d): unknown header style", style)
			return
		}
		c.headers = style
	}
}

// WithProblemJSON makes the guard answer its refusals with an RFC 9457 problem document
// (application/problem+json) instead of plain text. A denial uses the problem type
// https://iana.org/assignments/http-problem-types#quota-exceeded of the IETF rate-limit draft
// and lists the names of the violated policies in "violated-policies".
func WithProblemJSON() Option {
	return func(c *config) { c.problem = true }
}

// WithSkip exempts the requests for which skip reports true (health checks, say): they are
// neither checked nor charged, and get no rate-limit headers.
func WithSkip(skip func(Request) bool) Option {
	return func(c *config) {
		if skip == nil {
			c.errorf("WithSkip(nil): give it a function")
			return
		}
		c.skip = skip
	}
}

// CountIf charges only requests whose response status satisfies count: with
// func(s int) bool { return s == 401 }, only failed logins use up the quota.
//
// The guard charges every request before its handler, atomically, as without CountIf, and
// after the handler refunds the charge of a request whose status does not count
// ([Limiter.Refund]). A request in flight holds its charge, so a burst of concurrent failed
// logins cannot get past the limit. A refund gives back only what time has not already given
// back (a slow handler's charge may have refilled meanwhile), so nothing is credited twice.
// X-RateLimit-Remaining counts the request as charged. CountIf cannot be combined with a
// shaping policy, whose slot is reserved in a queue before the request runs.
func CountIf(count func(status int) bool) Option {
	return func(c *config) {
		if count == nil {
			c.errorf("CountIf(nil): give it a function")
			return
		}
		c.countIf = count
	}
}

// WithNow sets the clock the guard reads to write X-RateLimit-Reset as an instant (default
// [time.Now]). The limits themselves run on the store's clock.
func WithNow(now func() time.Time) Option {
	return func(c *config) {
		if now == nil {
			c.errorf("WithNow(nil): give it a function, e.g. time.Now")
			return
		}
		c.now = now
	}
}

// withWait replaces the shaping wait, for tests.
func withWait(wait func(ctx context.Context, d time.Duration) error) Option {
	return func(c *config) { c.wait = wait }
}
