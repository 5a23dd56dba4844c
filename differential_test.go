package ratelimit_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// The Go transitions (memory store) and the Lua ones (Redis) agree on every decision of long
// random request sequences, for random parameters of every algorithm — small limits, and rates
// up to 10^9 units per second whose emission interval is a fraction of a microsecond — with
// peeks, refunds, costs far beyond any capacity, and a clock that sometimes goes back; beside
// a shadow policy; and while the limit changes between requests.
func TestEnginesAgreeOnRandomTraffic(t *testing.T) {
	client := redistest.Standalone(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, alg := range allAlgorithms {
		for trial := 0; trial < 8; trial++ {
			p := randomPolicy(rng, alg, trial%2 == 1)
			t.Run(fmt.Sprintf("%s/%d-per-%v-burst-%d", alg.Name(), p.Limit, p.Window, p.Burst), func(t *testing.T) {
				agree(t, client, rng, p, 300)
			})
			// With a shadow policy beside it: charged only with what it admits, never deciding.
			shadow := randomPolicy(rng, allAlgorithms[rng.IntN(len(allAlgorithms))], false)
			shadow.Name, shadow.Shadow = "shadow", true
			t.Run(fmt.Sprintf("%s/%d-per-%v-burst-%d/with-shadow-%s", alg.Name(), p.Limit, p.Window, p.Burst, shadow.Algorithm.Name()), func(t *testing.T) {
				agree(t, client, rng, p, 300, shadow)
			})
			// Its limit changing: three configurations of it, its Name, algorithm and Window kept
			// and its Limit and Burst varied (often so that the interval's fraction has another
			// denominator), each request through one picked at random.
			p.Name = "changing"
			configs := [][]ratelimit.Policy{{p}, {otherLimit(rng, p)}, {otherLimit(rng, p)}}
			t.Run(fmt.Sprintf("%s/%d-per-%v-burst-%d/limit-changing-to-%d-and-%d", alg.Name(), p.Limit, p.Window, p.Burst, configs[1][0].Limit, configs[2][0].Limit), func(t *testing.T) {
				agreeAcross(t, client, rng, configs, 300)
			})
			// Lists of different lengths sharing the identity and some of their policies (tiers,
			// a Resolver): a shared policy has one state, whichever list charges it.
			q := randomPolicy(rng, allAlgorithms[rng.IntN(len(allAlgorithms))], false)
			q.Name = "second"
			shared := [][]ratelimit.Policy{{configs[0][0], q}, {configs[0][0]}, {q}}
			t.Run(fmt.Sprintf("%s/%d-per-%v-burst-%d/lists-sharing-it-and-%s", alg.Name(), p.Limit, p.Window, p.Burst, q.Algorithm.Name()), func(t *testing.T) {
				agreeAcross(t, client, rng, shared, 300)
			})
		}
	}
}

// The Redis store's denial cache, on by default, changes no admission or denial of random
// traffic (peeks, refunds, costs beyond capacity, a clock that goes back, a shadow policy, a
// limit changing between requests), and answers no more than the store would; it answers
// nothing for the sliding counter, whose Retry-After is not exact, nor for an in-flight limit.
func TestDenialCacheAgreesWithTheStore(t *testing.T) {
	client := redistest.Standalone(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, alg := range allAlgorithms {
		hits := 0
		for trial := 0; trial < 2; trial++ {
			p := randomPolicy(rng, alg, trial%2 == 1)
			shadow := randomPolicy(rng, allAlgorithms[rng.IntN(len(allAlgorithms))], false)
			shadow.Name, shadow.Shadow = "shadow", true
			other := randomPolicy(rng, allAlgorithms[rng.IntN(len(allAlgorithms))], false)
			other.Name = "other"
			p.Name = "changing"
			for _, configs := range [][][]ratelimit.Policy{
				{{p}},
				{{p, shadow}},
				{{p, other}},
				{{p}, {otherLimit(rng, p)}, {otherLimit(rng, p)}},
			} {
				t.Run(fmt.Sprintf("%s/%d-per-%v-burst-%d/%d", alg.Name(), p.Limit, p.Window, p.Burst, len(configs[0])+len(configs)), func(t *testing.T) {
					n := agreeOn(t, client, rng, configs, 300, true)
					if len(configs[0]) == 1 {
						hits += n
					}
				})
			}
		}
		exact := alg != (algorithms.SlidingCounter{}) && alg != (algorithms.InFlight{}) // in-flight: never cached
		if exact && hits == 0 || !exact && hits != 0 {
			t.Errorf("%s: the denial cache answered %d requests of its policy alone", alg.Name(), hits)
		}
		t.Logf("%s: %d answers of the denial cache", alg.Name(), hits)
	}
}

// otherLimit returns p with another Limit (half, twice, or any up to three times p's) and a
// Burst of its own, valid for New.
func otherLimit(rng *rand.Rand, p ratelimit.Policy) ratelimit.Policy {
	for {
		q := p
		switch rng.IntN(3) {
		case 0:
			q.Limit = max(1, p.Limit/2)
		case 1:
			q.Limit = 2 * p.Limit
		default:
			q.Limit = 1 + rng.Int64N(3*p.Limit)
		}
		q.Burst = 0
		if rng.IntN(2) == 0 {
			q.Burst = q.Limit * (1 + rng.Int64N(3))
		}
		if (q.Limit != p.Limit || q.Burst != p.Burst) && valid(q) {
			return q
		}
	}
}

// FuzzEnginesAgree is the differential test as a fuzz target: the fuzzer picks the algorithm,
// the parameters and the traffic's seed.
func FuzzEnginesAgree(f *testing.F) {
	f.Add(uint8(0), int64(5), int64(1_000_000), int64(0), uint64(1))
	f.Add(uint8(6), int64(700_000), int64(1_000_000), int64(0), uint64(2))
	f.Add(uint8(3), int64(1_000_000_000), int64(1_000_000), int64(1_000_000_000), uint64(3))
	f.Add(uint8(4), int64(300_000), int64(1_000_000), int64(7), uint64(4))
	f.Add(uint8(2), int64(3), int64(1_500), int64(0), uint64(5))
	client := redistest.Standalone(f)
	f.Fuzz(func(t *testing.T, a uint8, limit, windowUS, burst int64, seed uint64) {
		p := ratelimit.Policy{Limit: limit, Window: time.Duration(windowUS) * time.Microsecond, Burst: burst,
			Algorithm: allAlgorithms[int(a)%len(allAlgorithms)]}
		if !valid(p) || p.Window > 10*time.Second {
			t.Skip()
		}
		agree(t, client, rand.New(rand.NewPCG(seed, 7)), p, 100)
	})
}

// fastLimit is the largest Limit randomPolicy draws with fast set.
const fastLimit = 1_000_000_000

// randomPolicy returns a valid policy of alg: a small limit, or with fast set a rate of up to
// 10^9 units per second over a window of up to 2 s, often not a whole number of microseconds
// per unit.
func randomPolicy(rng *rand.Rand, alg algorithms.Algorithm, fast bool) ratelimit.Policy {
	limitCap := fastLimitCaps()[alg]
	for {
		p := ratelimit.Policy{Algorithm: alg, Limit: 1 + rng.Int64N(50),
			Window: time.Duration(1+rng.Int64N(5000)) * time.Millisecond}
		if fast {
			p.Limit = 1 + rng.Int64N(fastLimit)
			p.Window = time.Duration(1+rng.Int64N(2000)) * time.Millisecond
		}
		if rng.IntN(3) == 0 {
			p.Window += time.Duration(rng.Int64N(1000)) * time.Microsecond // odd windows too
		}
		if rng.IntN(2) == 0 {
			p.Burst = p.Limit * (1 + rng.Int64N(3))
		}
		// A draw over the algorithm's cap is refused whatever its window: skipping it without
		// building a limiter draws the same policies, a sliding log's fast one after about a
		// million refused draws (minutes under the race detector when each built one).
		if (limitCap == 0 || p.Limit <= limitCap) && valid(p) {
			return p
		}
	}
}

// fastLimitCaps returns, for each algorithm that refuses a Limit of fastLimit (the sliding log
// and the in-flight limit, which keep an entry per unit), the largest Limit New accepts for it,
// found once by bisection; the other algorithms have no entry. It assumes what those two
// algorithms' validation does: a Limit is refused above a bound, whatever the window.
var fastLimitCaps = sync.OnceValue(func() map[algorithms.Algorithm]int64 {
	caps := map[algorithms.Algorithm]int64{}
	for _, alg := range allAlgorithms {
		accepts := func(limit int64) bool {
			return valid(ratelimit.Policy{Algorithm: alg, Limit: limit, Window: time.Second})
		}
		if accepts(fastLimit) {
			continue
		}
		lo, hi := int64(1), int64(fastLimit) // accepts(lo), !accepts(hi)
		for hi-lo > 1 {
			if mid := lo + (hi-lo)/2; accepts(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
		caps[alg] = lo
	}
	return caps
})

// agree runs steps random requests through p in memory and in Redis on one fake clock, and
// fails at the first decision they disagree on.
func agree(t *testing.T, client redis.UniversalClient, rng *rand.Rand, p ratelimit.Policy, steps int, more ...ratelimit.Policy) {
	t.Helper()
	agreeAcross(t, client, rng, [][]ratelimit.Policy{append([]ratelimit.Policy{p}, more...)}, steps)
}

// agreeAcross is agree over several configurations of one key: each request goes through the
// limiter of a configuration picked at random, over one memory store and one Redis store, and
// a refund through the limiter that made the decision. The first policy of the first
// configuration sets the scale of costs and steps. The Redis store has no denial cache: every
// decision is the script's.
func agreeAcross(t *testing.T, client redis.UniversalClient, rng *rand.Rand, configs [][]ratelimit.Policy, steps int) {
	t.Helper()
	agreeOn(t, client, rng, configs, steps, false)
}

// agreeOn is agreeAcross, with the Redis store's denial cache when cached is set: the two
// engines must then still agree on every admission and denial, and an answer of the cache
// must say no more than the store would (a Retry-After and a Remaining no greater than the
// memory store's: exact for the cost it saw denied, a lower bound for a larger one). It returns
// how many answers came from the cache.
func agreeOn(t *testing.T, client redis.UniversalClient, rng *rand.Rand, configs [][]ratelimit.Policy, steps int, cached bool) (hits int) {
	t.Helper()
	clock := newFakeClock()
	clock.Advance(time.Duration(rng.Int64N(int64(time.Hour))))
	memStore := ratelimit.NewMemoryStore(ratelimit.WithClock(clock))
	opts := []ratelimit.RedisOption{ratelimit.WithClock(clock)}
	if !cached {
		opts = append(opts, ratelimit.WithDenialCache(0))
	}
	// Half the sequences run on hash state (WithHashState): the same decisions, from fields
	// of one hash per identity.
	layout := "a key per policy"
	if rng.IntN(2) == 0 {
		opts, layout = append(opts, ratelimit.WithHashState()), "hash state"
	}
	t.Logf("Redis store: %s", layout)
	redStore := redisStore(t, client, opts...)
	mems, reds := make([]*ratelimit.Limiter, len(configs)), make([]*ratelimit.Limiter, len(configs))
	for i, policies := range configs {
		mems[i], reds[i] = mustNew(t, memStore, policies...), mustNew(t, redStore, policies...)
	}
	p := configs[0][0]
	key := keyOf(t)
	// unit is a block of cost that matters: 1 for small limits, Limit/25 for large ones.
	unit := max(1, p.Limit/25)
	stepMax := int64(p.Window)*unit/p.Limit*2 + 1
	var lastMem, lastRed ratelimit.Decision
	var lastBy int // the configuration that made lastMem and lastRed
	for i := 0; i < steps; i++ {
		c := 0
		if len(configs) > 1 { // one configuration draws nothing: agree's sequences stay as they were
			c = rng.IntN(len(configs))
		}
		mem, red := mems[c], reds[c]
		step := time.Duration(rng.Int64N(stepMax))
		if rng.IntN(15) == 0 {
			step = -step // the clock goes back (NTP, a failover to another server)
		}
		clock.Advance(step)
		cost := rng.Int64N(3)*unit + rng.Int64N(unit)
		switch rng.IntN(20) {
		case 0:
			cost = rng.Int64N(2*max(p.Limit, p.Burst) + 2)
		case 1:
			cost = []int64{math.MaxInt64, 1 << 54, 1 << 40}[rng.IntN(3)]
		}
		check := func(l *ratelimit.Limiter) ratelimit.Decision { return allow(t, l, key, cost) }
		if rng.IntN(10) == 0 {
			check = func(l *ratelimit.Limiter) ratelimit.Decision {
				d, err := l.Peek(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
		}
		if rng.IntN(12) == 0 && lastMem.Allowed { // give back the last charge
			if err := mems[lastBy].Settle(ctx, key, lastMem, 0); err != nil {
				t.Fatal(err)
			}
			if err := reds[lastBy].Settle(ctx, key, lastRed, 0); err != nil {
				t.Fatal(err)
			}
		}
		a, b := check(mem), check(red)
		if rng.IntN(2) == 0 {
			lastMem, lastRed, lastBy = a, b, c
		}
		if b.Source == observe.SourceDenialCache {
			hits++
			if a.Allowed || b.Allowed || b.RetryAfter <= 0 || b.RetryAfter > a.RetryAfter || b.Remaining > a.Remaining {
				t.Fatalf("step %d (cost %d, configuration %d): the denial cache answered what the store would not\nmemory: allowed=%v remaining=%d retry=%v\n cache: allowed=%v remaining=%d retry=%v",
					i, cost, c, a.Allowed, a.Remaining, a.RetryAfter, b.Allowed, b.Remaining, b.RetryAfter)
			}
			continue
		}
		if a.Allowed != b.Allowed || a.Remaining != b.Remaining || a.RetryAfter != b.RetryAfter ||
			a.ResetAfter != b.ResetAfter || a.Delay != b.Delay || a.EffectiveWindow != b.EffectiveWindow {
			t.Fatalf("step %d (cost %d, configuration %d): memory and Redis disagree\nmemory: allowed=%v remaining=%d retry=%v reset=%v delay=%v window=%v\n redis: allowed=%v remaining=%d retry=%v reset=%v delay=%v window=%v",
				i, cost, c, a.Allowed, a.Remaining, a.RetryAfter, a.ResetAfter, a.Delay, a.EffectiveWindow, b.Allowed, b.Remaining, b.RetryAfter, b.ResetAfter, b.Delay, b.EffectiveWindow)
		}
		for j, ra := range a.Results() {
			if rb := b.Results()[j]; ra.Allowed != rb.Allowed || ra.Remaining != rb.Remaining || ra.RetryAfter != rb.RetryAfter || ra.ResetAfter != rb.ResetAfter || ra.EffectiveWindow != rb.EffectiveWindow {
				t.Fatalf("step %d (cost %d): policy %q: memory and Redis disagree\nmemory: %+v\n redis: %+v", i, cost, ra.Policy.Name, ra, rb)
			}
		}
	}
	return hits
}

// valid reports whether New accepts p.
func valid(p ratelimit.Policy) bool {
	_, err := ratelimit.New(ratelimit.NewMemoryStore(), p)
	return err == nil
}
