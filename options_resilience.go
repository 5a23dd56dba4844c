package ratelimit

import (
	"math"
	"time"
)

// The Redis store's breaker unless WithBreaker says otherwise: five failures in a row are an
// outage, not a blip (a Redis that refuses connections opens it at once), and an open breaker
// probes Redis after 10 ms, then at doubling intervals of at most 100 ms, so a recovered Redis
// (a restart, a Sentinel failover) is used again within about 100 ms of answering.
const (
	defaultBreakerFailures = 5
	defaultBreakerCooldown = 100 * time.Millisecond
)

// defaultCallTimeout bounds every call of the Redis store unless WithCallTimeout says
// otherwise: a check that takes a second is an outage, and no caller should wait for a
// client's own timeouts (go-redis: 5 s a read since v9.22, times its retries). A variable
// only so that this package's tests, which must pass on a loaded machine, can lengthen it
// (see middleware_export_test.go), as they do the guard's defaultTimeout.
var defaultCallTimeout = time.Second

// resilience is what the options of this file set on a store.
type resilience struct {
	callTimeout     time.Duration // WithCallTimeout
	breakerFailures int
	breakerCooldown time.Duration
	denials         int     // denial cache entries; 0: none
	share           float64 // fallback share; 0: none
	observer        *Observer
}

// WithBreaker sets the Redis store's circuit breaker. It opens after failures consecutive
// failed calls of any kind (see observe.ErrorKinds: unavailable, timeout, busy, oom, readonly,
// script, other), or at the first call that could not connect to Redis at all (refused, no
// route: no request should wait for its deadline to learn that again). While it is open,
// checks fail at once, of kind breaker_open, and the fail mode or [WithFallback] decides, in microseconds instead of a timeout. An open breaker lets one call
// at a time probe Redis (half-open): the first 10 ms after it opened, each further one after
// twice the wait before, at most cooldown; the first probe that succeeds closes it, so
// recovery needs no restart and is noticed within cooldown, in every outage: a go-redis pool
// that has seen PoolSize failed dials answers calls with the cached dial error and dials
// again only once a second, and the store has it dial again when a probe needs it. A client
// going away is no failure.
//
// It logs once when it opens (with the kind and the error), once when it first probes
// (half-open), at most once a second while its probes fail, and once when it closes (how long
// it was open, and how many checks it decided without Redis); an [Observer] is told every
// change (closed, open, half-open).
//
// The Redis store has a breaker by default, as if given WithBreaker(5, 100*time.Millisecond):
// five failures in a row are an outage, not a blip, and a Redis that recovers (a restart, a
// Sentinel failover) is used again within about 100 ms of answering. WithBreaker(0, 0) turns it
// off, so that every check calls Redis and waits out its deadline.
func WithBreaker(failures int, cooldown time.Duration) RedisOption {
	return redisOption(func(sc *storeConfig) {
		if !sc.once("WithBreaker") {
			return
		}
		off := failures == 0 && cooldown == 0
		if !off && (failures < 1 || cooldown <= 0) {
			sc.errorf("WithBreaker(%d, %v): it needs at least one failure and a positive cool-down (or 0, 0 for no breaker)", failures, cooldown)
			return
		}
		sc.res.breakerFailures, sc.res.breakerCooldown = failures, cooldown
	})
}

// WithCallTimeout bounds every call the Redis store makes to Redis (a check, a refund, a
// renewal, a reset) by d, 1 s by default: a call whose context has no deadline, or a later
// one, gives up after d, of kind timeout, its error naming this bound. A context's earlier
// deadline (a guard's [WithTimeout], 100 ms by default) still ends the call first. So
// Limiter.Allow and Limiter.Wait with context.Background() never wait for the client's own
// timeouts (go-redis's: 5 s a read, and a dial retried five times), whatever the client's
// options.
func WithCallTimeout(d time.Duration) RedisOption {
	return redisOption(func(sc *storeConfig) {
		if !sc.once("WithCallTimeout") {
			return
		}
		if d <= 0 {
			sc.errorf("WithCallTimeout(%v): the bound must be positive", d)
			return
		}
		sc.res.callTimeout = d
	})
}

// WithDenialCache sets the size of the Redis store's denial cache, which is on by default
// with room for 10,000 denials; WithDenialCache(0) turns it off.
//
// The cache answers locally, until its Retry-After ends, an identity Redis has denied, when
// that Retry-After is exact: nothing but time would admit the request sooner. That is a denial
// by a fixed window, a sliding log, GCRA, a token bucket or a leaky bucket; not by a sliding
// counter (its Retry-After is an upper bound) nor by a policy with [Policy.NoDenialCache],
// and never for a list with an in-flight limit (slots come back when requests end). A hot denied identity then
// costs Redis nothing until its Retry-After, and then one call (one request at a time asks
// again while the others are still answered from the cache, and one more each millisecond
// while none has answered, so a stalled call keeps it denied at most a millisecond past its
// Retry-After); the answers keep their headers,
// Retry-After counting down, and have Source observe.SourceDenialCache. A denial answers only
// the policy list it was denied under and a request of the same cost or more (a larger cost
// is denied at least as long). It never admits, so it never admits what Redis would deny.
//
// A refund or a reset through this process forgets the identity's denials at once, an
// admission of it drops them (their Remaining would be stale), and a changed limit is
// another policy list. A refund or a reset made by another instance or by the ratelimit
// command is announced on a channel every store with a denial cache subscribes to, and ends
// the denial a message later (while the subscription is down the cache takes no new denial:
// see [Observer.DenialCacheDeaf]). A limit another instance runs differently is seen only
// when the cached denial ends: until then this instance denies the identity longer than
// needed, never admits more. When full, the cache drops
// ended denials, else an identity's, which only sends its next request to Redis.
func WithDenialCache(entries int) RedisOption {
	return redisOption(func(sc *storeConfig) {
		if !sc.once("WithDenialCache") {
			return
		}
		if entries < 0 {
			sc.errorf("WithDenialCache(%d): the size is a number of denials, 0 to turn the cache off", entries)
			return
		}
		sc.res.denials = entries
	})
}

// WithFallback decides locally while the Redis store is unavailable (an error, a timeout, an
// open breaker): an in-memory limiter under the same policies with each limit and burst scaled
// by share, this instance's part of the fleet's limits (1.0/n for n instances; at least 1 of
// each limit). Its decisions carry rate-limit headers and have Source observe.SourceFallback;
// a guard that fails closed ([Response.FailClosed]) still refuses them.
//
// Bound on over-admission: during an outage the fleet admits about share × n times what the
// policy admits in a window (its Limit for a window algorithm, up to Burst + Limit for GCRA and
// the buckets); the local state starts empty (a bucket full) and Redis never learns what it
// admitted, so with a share of 1/n a window that spans an outage admits up to one burst more
// than the policy does through Redis: twice the limit for a fixed window (measured: 60 + 100 +
// 40 of 100 per hour, by TestFallbackOverAdmission), 296 where Redis alone admits 199 for GCRA
// 100 per hour (TestFallbackOverAdmissionOfABucket). By default there is no fallback and the
// guard's fail mode decides.
func WithFallback(share float64) RedisOption {
	return redisOption(func(sc *storeConfig) {
		if !sc.once("WithFallback") {
			return
		}
		if !(share > 0 && share <= 1) || math.IsNaN(share) {
			sc.errorf("WithFallback(%v): the share is this instance's part of the limits, in (0, 1]", share)
			return
		}
		sc.res.share = share
	})
}

// WithObserver reports every decision, store failure and breaker change of the store's
// limiters and guards to the hooks o sets, e.g. those of a Prometheus or OpenTelemetry
// recorder (their Hooks method). The store keeps o: its fields must not change afterwards.
func WithObserver(o *Observer) StoreOption {
	return storeOption(func(sc *storeConfig) {
		if !sc.once("WithObserver") {
			return
		}
		if o == nil {
			sc.errorf("WithObserver(nil): give it an observer")
			return
		}
		sc.res.observer = o
	})
}
