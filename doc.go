// Package ratelimit rate-limits HTTP APIs that run on many instances, with Redis as the shared,
// atomic store and an in-memory store as the embedded default.
//
// A [Limiter] checks a list of [Policy] values at once — 10/s AND 100/min AND 1000/h — each
// enforced by one of six algorithms (package algorithms): a request is admitted only when every
// policy admits it, and then charged to all of them. Over the Redis store ([NewRedisStore]) the
// whole list is one atomic script call, shared by every instance; the memory store
// ([NewMemoryStore]) runs the same algorithms to the same results in this process. Policies are
// plain values, validated by [New]:
//
//	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(),
//		ratelimit.Policy{Limit: 10, Window: time.Second},
//		ratelimit.Policy{Limit: 1000, Window: time.Hour})
//	d, err := limiter.Allow(ctx, "user:42")
//
// [Middleware] puts a limiter in front of a net/http handler: it takes the key from the request
// through a [KeyFunc] (by default the client IP: the connection's address, or the address that
// proxies named by [TrustProxies] forwarded), writes X-RateLimit-Limit, X-RateLimit-Remaining
// and X-RateLimit-Reset on every response the limiter decided, answers 429 with an honest
// Retry-After, and hands the handler its [Decision] ([DecisionFrom]):
//
//	http.ListenAndServe(":8080", ratelimit.Middleware(limiter)(mux))
//
// The framework adapters for Gin, Echo v4 and v5, Fiber v2 and v3, and the gRPC server
// interceptors (each its own module under adapters/) call the same [Guard], so they behave
// alike. Errors are told apart with errors.Is ([ErrNoKey],
// [ErrBadRequest], [ErrStore]) and the kind of a store failure named by observe.ErrorKind; time
// comes from one [Clock], injected into a store with [WithClock].
//
// A guard's options are of type [Option]; the stores' of types [StoreOption] (both stores)
// and [RedisOption] (the Redis store's own), so that an option given where it does not fit
// does not compile. Package observe names what the limiter reports to an [Observer] (the result of
// each request, the source of each decision, the breaker's states, the kinds of errors).
package ratelimit
