package ratelimit_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/algo"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

var ctx = context.Background()

func mustNew(t testing.TB, store ratelimit.Store, policies ...ratelimit.Policy) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(store, policies...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func allow(t testing.TB, l *ratelimit.Limiter, key string, cost int64) ratelimit.Decision {
	t.Helper()
	d, err := l.AllowN(ctx, key, cost)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A request denied by one policy consumes nothing from the others.
func TestMultiPolicyAllOrNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		perSecond := ratelimit.Policy{Limit: 2, Window: time.Second, Algorithm: algorithms.FixedWindow{}}
		perMinute := ratelimit.Policy{Limit: 5, Window: time.Minute, Algorithm: algorithms.SlidingLog{}}
		l := mustNew(t, store, perSecond, perMinute)
		key := keyOf(t)
		for i := 0; i < 2; i++ {
			if d := allow(t, l, key, 1); !d.Allowed {
				t.Fatalf("request %d denied", i)
			}
		}
		for i := 0; i < 10; i++ { // the per-second policy denies; the per-minute one must not pay
			d := allow(t, l, key, 1)
			if d.Allowed {
				t.Fatalf("request %d beyond 2/s allowed", i)
			}
			if d.Policy.Window != time.Second || d.Policy.Limit != 2 {
				t.Fatalf("binding policy %v, want the per-second one", d.Policy)
			}
		}
		res := allow(t, l, key, 0).Results()
		if got := res[1].Remaining; got != 3 {
			t.Fatalf("per-minute remaining after denials = %d, want 3", got)
		}
		clock.Advance(time.Second)
		d := allow(t, l, key, 1)
		if !d.Allowed || d.Remaining != 1 {
			t.Fatalf("after 1s: allowed=%v remaining=%d, want true 1 (both policies at 1 left)", d.Allowed, d.Remaining)
		}
	})
}

// Mixed algorithms in one list; the binding policy is the one with the least remaining, and on
// a denial the one with the longest wait.
func TestMixedAlgorithmsBinding(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		policies := []ratelimit.Policy{
			ratelimit.Policy{Limit: 10, Window: time.Second, Algorithm: algorithms.TokenBucket{}},
			ratelimit.Policy{Limit: 4, Window: time.Minute, Algorithm: algorithms.SlidingCounter{}},
			ratelimit.Policy{Limit: 100, Window: time.Hour, Algorithm: algorithms.GCRA{}},
			ratelimit.Policy{Limit: 50, Window: time.Hour, Algorithm: algorithms.LeakyBucket{}},
			ratelimit.Policy{Limit: 1000, Window: 24 * time.Hour, Algorithm: algorithms.FixedWindow{}},
		}
		l := mustNew(t, store, policies...)
		key := keyOf(t)
		d := allow(t, l, key, 1)
		if !d.Allowed || d.Policy.Limit != 4 || d.Remaining != 3 {
			t.Fatalf("got allowed=%v binding=%v remaining=%d, want the 4/min policy with 3 left", d.Allowed, d.Policy, d.Remaining)
		}
		if n := len(d.Results()); n != 5 {
			t.Fatalf("got %d results, want 5", n)
		}
		allow(t, l, key, 3)
		d = allow(t, l, key, 1)
		if d.Allowed || d.Policy.Limit != 4 {
			t.Fatalf("got allowed=%v binding=%v, want denied by the 4/min policy", d.Allowed, d.Policy)
		}
		if d.RetryAfter <= 0 || d.RetryAfter > 2*time.Minute {
			t.Fatalf("retry after %v, want within the next two minutes", d.RetryAfter)
		}
		clock.Advance(d.RetryAfter)
		if d := allow(t, l, key, 1); !d.Allowed {
			t.Fatalf("denied after waiting RetryAfter")
		}
	})
}

func TestRetryAfterIsTheLongestDenial(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		l := mustNew(t, store, ratelimit.Policy{Limit: 1, Window: time.Second}, ratelimit.Policy{Limit: 1, Window: time.Minute, Algorithm: algorithms.FixedWindow{}})
		key := keyOf(t)
		allow(t, l, key, 1)
		d := allow(t, l, key, 1)
		if d.Allowed || d.RetryAfter != time.Minute || d.Policy.Window != time.Minute {
			t.Fatalf("got allowed=%v retry=%v binding=%v, want denied for 1m by the per-minute policy", d.Allowed, d.RetryAfter, d.Policy)
		}
		denied := 0
		for _, r := range d.Results() {
			if !r.Allowed {
				denied++
			}
		}
		if denied != 2 {
			t.Fatalf("got %d denying policies, want 2", denied)
		}
	})
}

func TestPeekChargesNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, alg := range allAlgorithms {
			t.Run(alg.Name(), func(t *testing.T) {
				l := mustNew(t, store, ratelimit.Policy{Limit: 2, Window: time.Second, Algorithm: alg})
				key := keyOf(t)
				for i := 0; i < 5; i++ {
					if d, err := l.Peek(ctx, key); err != nil || !d.Allowed || d.Remaining != 1 {
						t.Fatalf("peek %d: allowed=%v remaining=%d err=%v, want true 1", i, d.Allowed, d.Remaining, err)
					}
				}
				allow(t, l, key, 2)
				if d, _ := l.Peek(ctx, key); d.Allowed {
					t.Fatal("peek on an exhausted policy says allowed")
				}
			})
		}
	})
}

// allAlgorithms is every algorithm package algorithms registers, in its order: the tests
// range over it, so a new algorithm is tested everywhere without another list to edit.
var allAlgorithms = func() []algorithms.Algorithm {
	var out []algorithms.Algorithm
	for _, v := range algo.Values() {
		out = append(out, v.(algorithms.Algorithm))
	}
	return out
}()

// rateAlgorithms are allAlgorithms but the in-flight limit.
var rateAlgorithms = slices.DeleteFunc(slices.Clone(allAlgorithms), func(a algorithms.Algorithm) bool {
	return a == algorithms.InFlight{}
})

func TestResetForgets(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, alg := range allAlgorithms {
			t.Run(alg.Name(), func(t *testing.T) {
				l := mustNew(t, store, ratelimit.Policy{Limit: 1, Window: time.Hour, Algorithm: alg}, ratelimit.Policy{Limit: 5, Window: 24 * time.Hour, Algorithm: alg})
				key := keyOf(t)
				allow(t, l, key, 1)
				if allow(t, l, key, 1).Allowed {
					t.Fatal("second request in the hour allowed")
				}
				if err := l.Reset(ctx, key); err != nil {
					t.Fatal(err)
				}
				if d := allow(t, l, key, 1); !d.Allowed || d.Results()[1].Remaining != 4 {
					t.Fatalf("after Reset: allowed=%v daily remaining=%d, want true 4", d.Allowed, d.Results()[1].Remaining)
				}
			})
		}
	})
}

// Edge cases every algorithm must get right, on every engine.
func TestEdgeCases(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, alg := range allAlgorithms {
			t.Run(alg.Name(), func(t *testing.T) {
				key := keyOf(t)

				// Limit 1 per day: one request, then a wait of at most a day (two for the sliding
				// counter, whose estimate still weighs yesterday's request), then one more.
				l := mustNew(t, store, ratelimit.Policy{Limit: 1, Window: 24 * time.Hour, Algorithm: alg})
				if !allow(t, l, key, 1).Allowed {
					t.Fatal("first request of 1/day denied")
				}
				d := allow(t, l, key, 1)
				if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 48*time.Hour {
					t.Fatalf("second request of 1/day: allowed=%v retry=%v", d.Allowed, d.RetryAfter)
				}
				clock.Advance(d.RetryAfter)
				if !allow(t, l, key, 1).Allowed {
					t.Fatal("request after RetryAfter denied")
				}

				// Cost above the capacity: denied, never admissible, and charges nothing.
				l = mustNew(t, store, ratelimit.Policy{Limit: 3, Window: time.Minute, Algorithm: alg})
				d = allow(t, l, key+"-big", 4)
				if d.Allowed || d.RetryAfter != algorithms.Never {
					t.Fatalf("cost 4 of 3/min: allowed=%v retry=%v, want denied, Never", d.Allowed, d.RetryAfter)
				}
				for _, huge := range []int64{math.MaxInt64, 1 << 54, 1 << 62} { // would overflow the arithmetic
					if d := allow(t, l, key+"-big", huge); d.Allowed || d.RetryAfter != algorithms.Never {
						t.Fatalf("cost %d of 3/min: allowed=%v retry=%v, want denied, Never", huge, d.Allowed, d.RetryAfter)
					}
				}
				if d := allow(t, l, key+"-big", 3); !d.Allowed {
					t.Fatal("cost 3 after a refused cost 4 denied: the refused request was charged")
				}

				// A clock far in the future (year 2200) still computes exactly.
				clock.Set(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC))
				l = mustNew(t, store, ratelimit.Policy{Limit: 2, Window: time.Hour, Algorithm: alg})
				if a, b, c := allow(t, l, key+"-far", 1), allow(t, l, key+"-far", 1), allow(t, l, key+"-far", 1); !a.Allowed || !b.Allowed || c.Allowed {
					t.Fatalf("2/h in 2200: got %v %v %v, want true true false", a.Allowed, b.Allowed, c.Allowed)
				}
			})
		}
	})
}

func TestBadInput(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Second})
	if _, err := l.Allow(ctx, ""); !errors.Is(err, ratelimit.ErrBadRequest) {
		t.Errorf("empty key: got %v, want ErrBadRequest", err)
	}
	if _, err := l.AllowN(ctx, "k", -1); !errors.Is(err, ratelimit.ErrBadRequest) || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative cost: got %v, want ErrBadRequest naming it", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Allow(cancelled, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v, want context.Canceled", err)
	}
}

func TestPolicyValidation(t *testing.T) {
	cases := []struct {
		policy ratelimit.Policy
		field  string
	}{
		{ratelimit.Policy{Limit: 0, Window: time.Second}, "Limit"},
		{ratelimit.Policy{Limit: -5, Window: time.Second}, "Limit"},
		{ratelimit.Policy{Limit: 10, Window: 0}, "Window"},
		{ratelimit.Policy{Limit: 10, Window: -time.Second}, "Window"},
		{ratelimit.Policy{Limit: 10, Window: 500 * time.Microsecond}, "Window"},
		{ratelimit.Policy{Limit: 10, Window: time.Second + time.Nanosecond}, "Window"},
		{ratelimit.Policy{Limit: 10, Window: time.Second, Burst: -1}, "Burst"},
		{ratelimit.Policy{Limit: 10, Window: time.Second, Burst: 5, Algorithm: algorithms.FixedWindow{}}, "Burst"},
		{ratelimit.Policy{Limit: 1 << 41, Window: time.Second}, "Limit"},
		{ratelimit.Policy{Limit: 1_000_003, Window: 366 * 24 * time.Hour, Burst: 1 << 30}, "2^53"},
		{ratelimit.Policy{Limit: 1_001, Window: time.Second, Algorithm: algorithms.SlidingLog{}}, "Limit"},
		{ratelimit.Policy{Name: "Bad Name", Limit: 10, Window: time.Second}, "Name"},
		{ratelimit.Policy{Name: "1abc", Limit: 10, Window: time.Second}, "Name"},
		{ratelimit.Policy{Limit: 366, Window: 24 * time.Hour, Burst: 1 << 40}, "Burst"},
		{ratelimit.Policy{Limit: 1, Window: 366 * 24 * time.Hour, Burst: 1 << 20, Algorithm: algorithms.TokenBucket{}}, "Burst"},
	}
	for _, c := range cases {
		_, err := ratelimit.New(ratelimit.NewMemoryStore(), c.policy)
		if err == nil || !strings.HasPrefix(err.Error(), "ratelimit: invalid policy") || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%v: got %v, want an invalid-policy error naming %s", c.policy, err, c.field)
		}
	}
	if _, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Second}, ratelimit.Policy{Limit: 1, Window: time.Second}); err == nil {
		t.Error("two policies with one name accepted")
	}
	if _, err := ratelimit.New(ratelimit.NewMemoryStore()); err == nil {
		t.Error("no policy accepted")
	}
	if _, err := ratelimit.New(nil, ratelimit.Policy{Limit: 1, Window: time.Second}); err == nil {
		t.Error("nil store accepted")
	}
}

func TestPolicyDefaultName(t *testing.T) {
	for _, c := range []struct {
		p    ratelimit.Policy
		want string
	}{
		{ratelimit.Policy{Limit: 100, Window: time.Minute}, "gcra-100-per-1m"},
		{ratelimit.Policy{Limit: 10, Window: time.Second, Burst: 20, Algorithm: algorithms.TokenBucket{}}, "token-bucket-10-per-1s"},
		{ratelimit.Policy{Name: "login", Limit: 5, Window: time.Hour, Algorithm: algorithms.SlidingLog{}}, "login"},
		{ratelimit.Policy{Limit: 3, Window: 1500 * time.Millisecond, Algorithm: algorithms.FixedWindow{}}, "fixed-window-3-per-1500ms"},
		{ratelimit.Policy{Limit: 7, Window: 24 * time.Hour, Algorithm: algorithms.SlidingCounter{}}, "sliding-window-counter-7-per-1d"},
	} {
		l := mustNew(t, ratelimit.NewMemoryStore(), c.p)
		d, err := l.Peek(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Policy.Name; got != c.want {
			t.Errorf("Name of %+v: got %q, want %q", c.p, got, c.want)
		}
	}
}

// Identities that differ must never share state, whatever bytes they hold.
func TestKeysDoNotCollide(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		l := mustNew(t, store, ratelimit.Policy{Limit: 1, Window: time.Hour, Algorithm: algorithms.FixedWindow{}})
		base := keyOf(t)
		long := strings.Repeat("x", 10_000)
		ids := []string{
			base + "a}b", base + "a", base + "{a}", base + "a:b", base + "a\x00b", base + "a\x00c",
			base + long, base + long + "y", base + "\xff\xfe", base + "é", base + " ", base + "a/b",
		}
		for _, id := range ids {
			if d := allow(t, l, id, 1); !d.Allowed {
				t.Fatalf("first request of %.40q denied: it shares state with another identity", id)
			}
		}
		for _, id := range ids {
			if d := allow(t, l, id, 1); d.Allowed {
				t.Fatalf("second request of %.40q allowed", id)
			}
		}
	})
}

// The server losing its script cache (SCRIPT FLUSH, a restart, a failover) is invisible.
func TestScriptFlushIsInvisible(t *testing.T) {
	client := redistest.Standalone(t)
	l := mustNew(t, redisStore(t, client), ratelimit.Policy{Limit: 3, Window: time.Minute})
	for i := 0; i < 3; i++ {
		if err := client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if d := allow(t, l, "flush", 1); !d.Allowed || d.Remaining != int64(2-i) {
			t.Fatalf("request %d after SCRIPT FLUSH: allowed=%v remaining=%d", i, d.Allowed, d.Remaining)
		}
	}
}

// With no clock injected, the Redis store reads the server's TIME, and keys still expire.
func TestRedisServerTime(t *testing.T) {
	for _, e := range engines[1:] {
		t.Run(e.name, func(t *testing.T) {
			l := mustNew(t, e.store(t), ratelimit.Policy{Limit: 5, Window: time.Second}, ratelimit.Policy{Limit: 10, Window: time.Minute, Algorithm: algorithms.SlidingLog{}})
			for i := 0; i < 5; i++ {
				if !allow(t, l, "servertime", 1).Allowed {
					t.Fatalf("request %d denied", i)
				}
			}
			d := allow(t, l, "servertime", 1)
			if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 200*time.Millisecond {
				t.Fatalf("6th request: allowed=%v retry=%v, want denied for about 200ms", d.Allowed, d.RetryAfter)
			}
		})
	}
}

// Corrupt state in Redis is an error naming the key, not a panic or a silent reset.
func TestRedisMalformedState(t *testing.T) {
	client := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	// No breaker: each malformed state below is an error of its own, and the breaker would
	// count them as failures of Redis.
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithBreaker(0, 0))
	l := mustNew(t, store, ratelimit.Policy{Limit: 3, Window: time.Minute, Algorithm: algorithms.TokenBucket{}})
	allow(t, l, "bad", 1)
	keys, err := client.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v %v", keys, err)
	}
	// The TAT is "us" or "us:fr:den" with 0 < fr < den; a den other than the policy's is a
	// changed limit, read rounded up, and anything else is corruption.
	for _, v := range []string{"not:numbers:at all", "5:1", "5:3:2", "5:3:3", "5:-1:3", "5:0:3", "5:1:3:4", "5.5", "5:1.5:3"} {
		client.Set(ctx, keys[0], v, time.Minute)
		if _, err := l.Allow(ctx, "bad"); err == nil || !strings.Contains(err.Error(), "malformed state") {
			t.Fatalf("state %q: got %v, want a malformed-state error", v, err)
		}
	}
	client.Set(ctx, keys[0], "5:1:1000", time.Minute)
	if _, err := l.Allow(ctx, "bad"); err != nil {
		t.Fatalf("a fraction of another denominator: %v, want it read", err)
	}
	client.Del(ctx, keys[0])
	client.ZAdd(ctx, keys[0], redisZ(1))
	client.Expire(ctx, keys[0], time.Minute)
	if _, err := l.Allow(ctx, "bad"); err == nil {
		t.Fatal("a key of the wrong type gave no error")
	}
}

// Any go-redis client fits the Redis store: a Ring (here of two shards on one server) too. A
// Ring cannot hear the announcements of every shard, so the store runs without its denial
// cache, and tells its observer (denial_cache).
func TestRedisRing(t *testing.T) {
	addr := redistest.Addr(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": addr, "b": addr}})
	t.Cleanup(func() { ring.Close() })
	obs := &evictionSeen{}
	l := mustNew(t, redisStore(t, ring, ratelimit.WithObserver(obs.observer())), ratelimit.Policy{Limit: 2, Window: time.Minute}, ratelimit.Policy{Limit: 5, Window: time.Hour, Algorithm: algorithms.SlidingLog{}})
	for i, want := range []bool{true, true, false} {
		if d := allow(t, l, "ring", 1); d.Allowed != want {
			t.Fatalf("request %d: allowed=%v, want %v", i, d.Allowed, want)
		}
	}
	if got := obs.degradations(); !slices.Equal(got, []string{"denial_cache"}) {
		t.Errorf("reported degradations %v; want [denial_cache]", got)
	}
}

// The two bounds of exact arithmetic of docs/policies.md, as it states them: at 1 per hour the largest
// burst is 312,749 (a full bucket drains within 2^50 µs), and 10^9 per second with a burst of
// 10^9 fits the 2^53 bound; one more unit of burst is refused, naming the bound.
func TestREADMEExactnessBounds(t *testing.T) {
	store := ratelimit.NewMemoryStore()
	for _, c := range []struct {
		p    ratelimit.Policy
		fits bool
		says string
	}{
		{ratelimit.Policy{Limit: 1, Window: time.Hour, Burst: 312_749}, true, ""},
		{ratelimit.Policy{Limit: 1, Window: time.Hour, Burst: 312_750}, false, "longer than 2^50µs (35 years) to drain"},
		{ratelimit.Policy{Limit: 1_000_000_000, Window: time.Second, Burst: 1_000_000_000}, true, ""},
		{ratelimit.Policy{Limit: 1_000_003, Window: 24 * time.Hour, Burst: 1_000_003}, false, "beyond exact arithmetic"},
	} {
		_, err := ratelimit.New(store, c.p)
		if c.fits != (err == nil) || err != nil && !strings.Contains(err.Error(), c.says) {
			t.Errorf("Burst %d at %d per %v: %v; want fits=%v, an error saying %q", c.p.Burst, c.p.Limit, c.p.Window, err, c.fits, c.says)
		}
	}
}
