// Package ratelimit rate-limits HTTP APIs that run on many instances, with Redis as the shared,
// atomic store and an in-memory store as the embedded default.
//
// A [Limiter] checks a list of [Policy] values at once — 10/s AND 100/min AND 1000/h — each
// enforced by one of six algorithms (package algorithms): a request is admitted only when every
// policy admits it, and then charged to all of them. With a [RedisStore] the whole list is one
// atomic script call, shared by every instance; a [MemoryStore] runs the same algorithms to the
// same results in this process.
//
//	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.PerSecond(10), ratelimit.PerHour(1000))
//	d, err := limiter.Allow(ctx, "user:42")
//
// [Middleware] puts a limiter in front of a net/http handler: it takes the key from the request
// through a [KeyFunc] (by default the connection's IP address; forwarding headers only from
// proxies you trust), writes X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset on
// every response, and answers 429 with an honest Retry-After:
//
//	http.ListenAndServe(":8080", ratelimit.Middleware(limiter)(mux))
//
// The framework adapters for Gin, Echo and Fiber (each its own module under adapters/) call the
// same [Guard], so they behave alike.
package ratelimit
