package observe

// keyFallbackReasons are the reasons of KeyFallbackReasons, in its order.
var keyFallbackReasons = [...]string{"no_header", "no_user", "no_route", "no_key", "no_proxy_header", "resolver_failed"}

// KeyFallbackReasons returns the reasons an Observer is told a guard limited a request by a
// fallback rather than as configured (ratelimit.Observer.KeyFellBack). By its client IP
// instead of its key: "no_header" (KeyByHeader found no header), "no_user" (KeyByUser found no
// user), "no_route" (KeyByRoute found no route yet), "no_key" (a key function of yours returned
// ErrNoKey). By the address of a trusted proxy (ratelimit.TrustProxies) instead of its
// client's: "no_proxy_header" (the proxy's request named no client in the header the proxies
// write: a health check of the proxy's own, or a client that shares the proxy's quota with
// every other it forwards so), counted each time the request's client IP is read. By the
// limiter's own policies instead of those its Resolver returns (ratelimit.WithResolver):
// "resolver_failed" (Resolve failed, or returned a policy that is not valid; also counted for
// the requests of that key while the failure is kept: a second, or the Resolver's TTL if
// shorter). A metrics module creates its series from them.
func KeyFallbackReasons() []string { return append([]string(nil), keyFallbackReasons[:]...) }
