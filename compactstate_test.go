package ratelimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// The keys of compact state: 14 bytes, the identity's digest as the hash tag (one slot for
// every policy of an identity), a key of its own for each prefix, identity and policy; and
// the same digests on every instance of every release (a fleet that computed them otherwise
// would split every quota), which the fixed keys below pin.
func TestStorageKeyCompact(t *testing.T) {
	gcra := ratelimit.Policy{Limit: 100, Window: time.Hour}
	fixed := ratelimit.Policy{Limit: 100, Window: time.Hour, Algorithm: algorithms.FixedWindow{}}
	k := ratelimit.StorageKey("rl:", "user:7", gcra, true)
	if k != "{iyih}ouuTKN0Y" {
		t.Errorf("StorageKey(rl:, user:7, 100/h GCRA, true) = %q; the digests changed: every identity of every fleet would start afresh", k)
	}
	if len(k) != 14 || k[0] != '{' || k[5] != '}' {
		t.Errorf("%q: want 14 bytes, the hash tag in the first 6", k)
	}
	other := map[string]string{
		"another prefix":   ratelimit.StorageKey("app2:", "user:7", gcra, true),
		"another identity": ratelimit.StorageKey("rl:", "user:8", gcra, true),
		"another policy":   ratelimit.StorageKey("rl:", "user:7", fixed, true),
		// The parts are delimited: moving bytes from the prefix to the identity is another key.
		"the same bytes, split otherwise": ratelimit.StorageKey("rl:u", "ser:7", gcra, true),
	}
	// Any identity, however long or binary, is a key of 14 bytes of base64url in braces.
	long := strings.Repeat("{x}\x00", 300)
	for _, id := range []string{long, long + "y", ""} {
		o := ratelimit.StorageKey("rl:", id, gcra, true)
		if len(o) != 14 || o[0] != '{' || o[5] != '}' || strings.ContainsAny(o[1:5]+o[6:], "{}:\x00") || o == k {
			t.Errorf("identity of %d bytes: key %q", len(id), o)
		}
		other[fmt.Sprintf("an identity of %d bytes", len(id))] = o
	}
	if other["an identity of 1200 bytes"] == other["an identity of 1201 bytes"] {
		t.Error("two long identities share a key")
	}
	for what, o := range other {
		if o == k || o[:6] == k[:6] && what != "another policy" {
			t.Errorf("%s: %q, against %q", what, o, k)
		}
	}
	if o := other["another policy"]; o[:6] != k[:6] {
		t.Errorf("two policies of one identity: %q and %q; want one hash tag", o, k)
	}
	// A named policy whose limit changes keeps its key, as readable keys do: the count
	// carries over.
	named := func(limit int64) string {
		return ratelimit.StorageKey("rl:", "user:7", ratelimit.Policy{Name: "api", Limit: limit, Window: time.Hour}, true)
	}
	if a, b := named(100), named(5); a != b {
		t.Errorf("another limit: %q; want %q", b, a)
	}
}

// On the server's clock, compact state keeps a GCRA policy's TAT in the key's expiry: the key
// holds the microseconds past the TAT's millisecond, a number Redis shares (OBJECT REFCOUNT of
// a shared integer is INT_MAX), and expires a millisecond after it. The decisions are GCRA's:
// 100 an hour admitted, the 101st denied with the TAT's Retry-After, one given back admitted
// again.
// A server before Redis 7.0 has no PEXPIRETIME: a store with compact state then keeps TATs in
// values, and says so, once, in its log and to its observer (compact_expiry). The server here
// is a Redis 7 that a proxy makes say it is 6: what the store reports is what is tested, the
// scripts still see the server as it is.
func TestCompactStateOnAServerBefore7(t *testing.T) {
	proxy := faultproxy.Start(t, redistest.Addr(t))
	proxy.Rewrite("redis_version:7", "redis_version:6")
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	t.Cleanup(func() { client.Close() })
	var logged syncBuffer
	obs := &evictionSeen{}
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithCompactState(), ratelimit.WithDenialCache(0),
		ratelimit.WithObserver(obs.observer()), ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	waitFor(t, "the servers' first read", func() bool { return len(obs.get()) > 0 })
	l := mustNew(t, store, ratelimit.Policy{Limit: 2, Window: time.Hour})
	for i, want := range []bool{true, true, false} {
		if d := allow(t, l, "user:7", 1); d.Allowed != want {
			t.Fatalf("request %d: allowed %v; want %v", i+1, d.Allowed, want)
		}
	}
	if got := obs.degradations(); !slices.Equal(got, []string{"compact_expiry"}) {
		t.Errorf("reported degradations %v; want [compact_expiry]", got)
	}
	if n := strings.Count(logged.String(), "compact state on a server before Redis 7.0"); n != 1 {
		t.Errorf("logged the old server %d times; want once:\n%s", n, logged.String())
	}
}

func TestCompactStateKeepsTATInExpiry(t *testing.T) {
	client := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	var logged syncBuffer
	obs := &evictionSeen{}
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithCompactState(), ratelimit.WithDenialCache(0),
		ratelimit.WithObserver(obs.observer()), ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	waitFor(t, "the servers' first read", func() bool { return len(obs.get()) > 0 })
	if strings.Contains(logged.String(), "before Redis 7.0") || len(obs.degradations()) > 0 {
		t.Errorf("Redis 7 taken for an older server: reported %v, logged:\n%s", obs.degradations(), logged.String())
	}
	p := ratelimit.Policy{Limit: 100, Window: time.Hour}
	l := mustNew(t, store, p)
	key := ratelimit.StorageKey(prefix, "user:7", p, true)

	var first, last ratelimit.Decision
	for i := range 100 {
		d := allow(t, l, "user:7", 1)
		if !d.Allowed {
			t.Fatalf("request %d denied: %+v", i+1, d)
		}
		if i == 0 {
			first = d
		}
		last = d
	}
	// The TAT: 100 intervals of 36 s after the first request's time.
	tat := ratelimit.DecisionTime(first).UnixMicro() + 100*36_000_000
	value, err := client.Get(ctx, key).Int64()
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	expiry, err := client.Do(ctx, "PEXPIRETIME", key).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if value < 0 || value > 999 || (expiry-1)*1000+value != tat {
		t.Fatalf("key %s holds %d and expires at %d ms: the TAT %d µs; want %d", key, value, expiry, (expiry-1)*1000+value, tat)
	}
	if refs, err := client.Do(ctx, "OBJECT", "REFCOUNT", key).Int64(); err != nil || refs != math.MaxInt32 {
		t.Errorf("OBJECT REFCOUNT %s = %d, %v; want a shared integer (%d)", key, refs, err, math.MaxInt32)
	}

	d := allow(t, l, "user:7", 1)
	want := time.Duration(tat-ratelimit.DecisionTime(d).UnixMicro()-99*36_000_000) * time.Microsecond
	if d.Allowed || d.RetryAfter != want || d.Remaining != 0 {
		t.Fatalf("the 101st request: %+v; want denied, Retry-After %v", d, want)
	}
	if err := l.Settle(ctx, "user:7", last, 0); err != nil {
		t.Fatal(err)
	}
	if d := allow(t, l, "user:7", 1); !d.Allowed {
		t.Fatalf("after a refund: %+v; want admitted", d)
	}
}

// Compact state decides as the Go model does, on the server's clock: random traffic on
// random policies of every algorithm (intervals of whole microseconds, whose TAT goes in the
// key's expiry, and of fractions, kept in values; rates fast enough that the time between two
// calls refills them, and now and then a pause of up to 2 ms), each request run first in Redis and then in
// memory at the time the script read, and every figure of the two compared.
func TestCompactStateAgreesWithTheModel(t *testing.T) {
	client := redistest.Standalone(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, alg := range rateAlgorithms {
		for trial := range 6 {
			p := ratelimit.Policy{Algorithm: alg, Limit: 1 + rng.Int64N(20)}
			// An interval of 20 µs to 2 ms, and every other trial a fraction of a microsecond more.
			p.Window = time.Duration(p.Limit*(20+rng.Int64N(2000))) * time.Microsecond
			if trial%2 == 1 && p.Limit > 1 {
				p.Window += time.Duration(1+rng.Int64N(p.Limit-1)) * time.Microsecond
			}
			if rng.IntN(2) == 0 {
				p.Burst = p.Limit * (1 + rng.Int64N(3))
			}
			if !valid(p) {
				continue
			}
			t.Run(fmt.Sprintf("%s/%d-per-%v-burst-%d", alg.Name(), p.Limit, p.Window, p.Burst), func(t *testing.T) {
				agreeCompact(t, client, rng, p, 300)
			})
		}
	}
}

// agreeCompact runs steps random requests through p in Redis with compact state on the
// server's clock, and in memory at each time Redis read, and fails at the first decision they
// disagree on.
func agreeCompact(t *testing.T, client redis.UniversalClient, rng *rand.Rand, p ratelimit.Policy, steps int) {
	t.Helper()
	clock := newFakeClock()
	mem := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), p)
	red := mustNew(t, redisStore(t, client, ratelimit.WithCompactState(), ratelimit.WithDenialCache(0)), p)
	key := keyOf(t)
	var last time.Time
	for i := range steps {
		if rng.IntN(6) == 0 {
			// Time passes: the bucket refills, and its TAT comes within a millisecond of the
			// server's time, where one kept in expiry would show an error of a millisecond. The
			// decisions are compared at the time Redis read, however long this takes.
			time.Sleep(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
		}
		cost := rng.Int64N(3)
		peek := rng.IntN(10) == 0
		decide := func(l *ratelimit.Limiter) ratelimit.Decision {
			if !peek {
				return allow(t, l, key, cost)
			}
			d, err := l.Peek(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		b := decide(red)
		at := ratelimit.DecisionTime(b)
		if at.Before(last) {
			t.Fatalf("step %d: the server's clock went back from %v to %v", i, last, at)
		}
		last = at
		clock.Set(at)
		a := decide(mem)
		if a.Allowed != b.Allowed || a.Remaining != b.Remaining || a.RetryAfter != b.RetryAfter ||
			a.ResetAfter != b.ResetAfter || a.Delay != b.Delay || a.EffectiveWindow != b.EffectiveWindow {
			t.Fatalf("step %d (cost %d, peek %v) at %d µs: memory and compact Redis disagree\nmemory: allowed=%v remaining=%d retry=%v reset=%v delay=%v window=%v\n redis: allowed=%v remaining=%d retry=%v reset=%v delay=%v window=%v",
				i, cost, peek, at.UnixMicro(), a.Allowed, a.Remaining, a.RetryAfter, a.ResetAfter, a.Delay, a.EffectiveWindow, b.Allowed, b.Remaining, b.RetryAfter, b.ResetAfter, b.Delay, b.EffectiveWindow)
		}
	}
}

// A compact store with an injected clock keeps TATs in values, since Redis expires keys on
// its own clock; a time that would read as a TAT in expiry (below 1,000 µs after 1970) is
// refused, not misread.
func TestCompactStateInjectedClock(t *testing.T) {
	client := redistest.Standalone(t)
	clock := newFakeClock()
	prefix := redistest.Prefix(t)
	p := ratelimit.Policy{Limit: 100, Window: time.Hour}
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithCompactState(), ratelimit.WithClock(clock)), p)
	allow(t, l, "user:7", 1)
	v, err := client.Get(ctx, ratelimit.StorageKey(prefix, "user:7", p, true)).Result()
	if want := strconv.FormatInt(clock.Now().UnixMicro()+36_000_000, 10); err != nil || v != want {
		t.Errorf("the key holds %q, %v; want the TAT %s", v, err, want)
	}
	clock.Set(time.UnixMicro(999))
	if _, err := l.Allow(ctx, "user:8"); err == nil {
		t.Error("a check at 999 µs after 1970: no error")
	}
}

// Under an LRU or LFU maxmemory-policy (with maxmemory set) Redis shares no numbers, so compact state saves only
// its keys' bytes: the store says so in a log line, and decides as before (its TAT still in
// the key's expiry, its value an object of its own).
func TestCompactStateUnderLRU(t *testing.T) {
	addr := redistest.Private(t, "--maxmemory-policy", "allkeys-lru", "--maxmemory", "64mb")
	client := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { client.Close() })
	var logged syncBuffer
	obs := &evictionSeen{}
	store := ratelimit.NewRedisStore(client, ratelimit.WithCompactState(), ratelimit.WithObserver(obs.observer()),
		ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	waitFor(t, "the eviction policy", func() bool { return len(obs.get()) > 0 })
	if !strings.Contains(logged.String(), "compact state under an LRU or LFU maxmemory-policy") {
		t.Errorf("logged:\n%s\nwant the line on compact state under LRU", logged.String())
	}
	p := ratelimit.Policy{Limit: 2, Window: time.Hour}
	l := mustNew(t, store, p)
	allow(t, l, "user:7", 1)
	key := ratelimit.StorageKey("rl:", "user:7", p, true)
	if v, err := client.Get(ctx, key).Int(); err != nil || v >= 1000 {
		t.Errorf("key %s holds %d, %v; want the TAT's last digits", key, v, err)
	}
	if refs, err := client.Do(ctx, "OBJECT", "REFCOUNT", key).Int64(); err != nil || refs != 1 {
		t.Errorf("OBJECT REFCOUNT %s = %d, %v; want an object of its own under LRU", key, refs, err)
	}
	if d := allow(t, l, "user:7", 1); !d.Allowed {
		t.Errorf("the second request: %+v; want admitted", d)
	}
	if d := allow(t, l, "user:7", 1); d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 30*time.Minute {
		t.Errorf("the third request: %+v; want denied for at most 30 minutes", d)
	}
}

// Four instances of compact state, each with its own client, and 64 goroutines on one
// identity, on the server's clock (the TAT in the key's expiry): GCRA admits exactly its burst
// of 100, not one more, on Redis and on a Cluster. (100 an hour: one more unit every 36 s,
// which the test never lasts.)
func TestCompactStateFleetExact(t *testing.T) {
	for _, e := range []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
	}{
		{"redis", func(t *testing.T) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: redistest.Addr(t), PoolSize: 16})
		}},
		{"cluster", func(t *testing.T) redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Clone(redistest.Cluster(t).Options().Addrs), PoolSize: 16})
		}},
	} {
		t.Run(e.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			p := ratelimit.Policy{Limit: 100, Window: time.Hour}
			var limiters []*ratelimit.Limiter
			for range 4 {
				c := e.client(t)
				t.Cleanup(func() { c.Close() })
				limiters = append(limiters, mustNew(t, ratelimit.NewRedisStore(c, ratelimit.WithPrefix(prefix), ratelimit.WithCompactState(), ratelimit.WithDenialCache(0)), p))
			}
			if got := hammer(t, limiters, 64, 16, "user:7"); got != 100 {
				t.Errorf("admitted %d of 1,024 requests; want exactly 100", got)
			}
		})
	}
}

// The identities that share the digest in a compact key's braces (24 bits: a client finds one
// that shares a given other's in a few thousand tries) share a Cluster slot and the name that
// announcements give, and nothing else: one denied does not deny the other from the denial
// cache.
func TestCompactStateSharedTag(t *testing.T) {
	client := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	p := ratelimit.Policy{Limit: 1, Window: time.Hour}
	seen := map[string]string{}
	var attacker, victim string
	for i := 0; victim == ""; i++ {
		id := "user:" + strconv.Itoa(i)
		tag := ratelimit.StorageKey(prefix, id, p, true)[:6]
		if other, ok := seen[tag]; ok {
			attacker, victim = other, id
		}
		seen[tag] = id
	}
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithCompactState())
	waitHearing(t, store)
	l := mustNew(t, store, p)
	allow(t, l, attacker, 1)
	if d := allow(t, l, attacker, 1); d.Allowed {
		t.Fatalf("%s admitted twice at 1 an hour", attacker)
	}
	if d := allow(t, l, attacker, 1); d.Allowed || d.Source != observe.SourceDenialCache {
		t.Fatalf("%s: %+v; want denied from the denial cache", attacker, d)
	}
	if d := allow(t, l, victim, 1); !d.Allowed {
		t.Errorf("%s, never charged, sharing %s's tag: denied by %v for %v", victim, attacker, d.Source, d.RetryAfter)
	}
}

// Refunds and resets announce on the prefix's channel, compact keys too: a user whose ACL
// allows the channels of its prefix alone (&<prefix>*) refunds and resets with compact state.
// A server that refuses the announcement fails the refund or the reset before it changed
// anything, with readable keys and compact ones: the caller is told it failed, and it did.
func TestAnnouncementsUnderACL(t *testing.T) {
	admin := redistest.Standalone(t)
	for _, compact := range []bool{false, true} {
		for _, channels := range []string{"prefix", "none"} {
			t.Run(fmt.Sprintf("compact=%v/channels=%s", compact, channels), func(t *testing.T) {
				prefix := redistest.Prefix(t)
				user := strings.NewReplacer(":", "-", "/", "-", "=", "-").Replace(prefix) + "user"
				acl := []any{"ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "resetchannels"}
				if channels == "prefix" {
					acl = append(acl, "&"+prefix+"*")
				}
				if err := admin.Do(ctx, acl...).Err(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
				client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), Username: user, Password: "pw"})
				t.Cleanup(func() { client.Close() })
				opts := []ratelimit.RedisOption{ratelimit.WithPrefix(prefix), ratelimit.WithDenialCache(0)}
				if compact {
					opts = append(opts, ratelimit.WithCompactState())
				}
				l := mustNew(t, ratelimit.NewRedisStore(client, opts...), ratelimit.Policy{Limit: 1, Window: time.Hour})
				charged := allow(t, l, "user:7", 1)
				refundErr, resetErr := l.Settle(ctx, "user:7", charged, 0), error(nil)
				refunded := allow(t, l, "user:7", 1).Allowed // charges again if refunded
				if refunded {
					resetErr = l.Reset(ctx, "user:7")
				}
				reset := allow(t, l, "user:7", 1).Allowed
				switch {
				case channels == "prefix" && (refundErr != nil || resetErr != nil || !refunded || !reset):
					t.Errorf("refund: %v, admitted after it %v; reset: %v, admitted after it %v; want both done", refundErr, refunded, resetErr, reset)
				case channels == "none" && (refundErr == nil || refunded):
					t.Errorf("refund: %v, admitted after it %v; want a NOPERM error and the charge kept", refundErr, refunded)
				case channels == "none" && l.Reset(ctx, "user:7") == nil:
					t.Error("reset refused no announcement")
				case channels == "none" && allow(t, l, "user:7", 1).Allowed:
					t.Error("a failed reset forgot the identity")
				}
			})
		}
	}
}
