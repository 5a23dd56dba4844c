package ratelimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
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

// count is how many decisions of source the observer was told of.
func (r *recorder) count(source observe.Source) int {
	s, _, _ := r.snapshot()
	return s[source]
}

// denyAll sends n requests of key, advancing the clock by step before each, and fails unless
// each is denied by the source want.
func denyAll(t *testing.T, f *faultyRedis, l *ratelimit.Limiter, key string, n int, step time.Duration, want observe.Source) {
	t.Helper()
	for i := range n {
		f.clock.Advance(step)
		if d := allow(t, l, key, 1); d.Allowed || d.Source != want {
			t.Fatalf("request %d of %s: allowed %v by %v; want denied by %v", i+1, key, d.Allowed, d.Source, want)
		}
	}
}

// The Redis store has a denial cache by default: a hot denied identity costs Redis no call
// until its Retry-After, then one (which Redis admits); every answer until then says it came
// from the cache, to the decision and to the observer. The request of cost 1 that spends the
// quota foretells the denial: the next is answered from the cache at once, as Redis would
// answer it (a twin store without the cache, on the same clock, is the judge).
func TestDenialCacheByDefault(t *testing.T) {
	for _, alg := range []algorithms.Algorithm{algorithms.GCRA{}, algorithms.FixedWindow{}, algorithms.SlidingLog{}, algorithms.TokenBucket{}, algorithms.LeakyBucket{}} {
		t.Run(alg.Name(), func(t *testing.T) {
			p := ratelimit.Policy{Limit: 2, Window: time.Minute, Algorithm: alg}
			f := newFaultyRedis(t) // no WithDenialCache
			twin := newFaultyRedis(t, ratelimit.WithDenialCache(0))
			l, judge := mustNew(t, f.store, p), mustNew(t, twin.store, p)
			for range 2 {
				allow(t, l, "hot", 1)
				allow(t, judge, "twin", 1)
			}
			before := f.sent()
			first, want := allow(t, l, "hot", 1), allow(t, judge, "twin", 1)
			if first.Allowed || first.Source != observe.SourceDenialCache || want.Allowed || want.Source != observe.SourceStore {
				t.Fatalf("third request of 2/min: %+v; want denied by the cache, as Redis denies it (%+v)", first, want)
			}
			if first.RetryAfter != want.RetryAfter || first.Remaining != want.Remaining || first.ResetAfter != want.ResetAfter {
				t.Fatalf("third request of 2/min from the cache: Retry-After %v, remaining %d, reset %v; Redis says %v, %d, %v",
					first.RetryAfter, first.Remaining, first.ResetAfter, want.RetryAfter, want.Remaining, want.ResetAfter)
			}
			seen := f.obs.count(observe.SourceDenialCache)
			const n = 1000
			step := (first.RetryAfter - time.Microsecond) / n
			denyAll(t, f, l, "hot", n, step, observe.SourceDenialCache)
			f.clock.Advance(first.RetryAfter - n*step - time.Microsecond) // 1 µs before it ends
			denyAll(t, f, l, "hot", 1, 0, observe.SourceDenialCache)
			if calls := f.sent() - before; calls != 0 {
				t.Fatalf("%d requests of a denied identity before its Retry-After made %d calls to Redis; want 0", n+2, calls)
			}
			if got := f.obs.count(observe.SourceDenialCache) - seen; got != n+1 {
				t.Errorf("the observer saw %d decisions of the denial cache; want %d", got, n+1)
			}
			f.clock.Advance(time.Microsecond)
			if d := allow(t, l, "hot", 1); !d.Allowed || d.Source != observe.SourceStore {
				t.Fatalf("at the Retry-After: %+v; want admitted by Redis", d)
			}
			if calls := f.sent() - before; calls != 1 {
				t.Fatalf("at the Retry-After, %d calls to Redis; want 1", calls)
			}
		})
	}
}

// A look (Peek) that finds one unit left foretells nothing: it charged nothing, and the
// request after it is admitted by Redis.
func TestDenialCachePeekForetellsNothing(t *testing.T) {
	f := newFaultyRedis(t)
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 2, Window: time.Minute})
	allow(t, l, "k", 1)
	if d, err := l.Peek(ctx, "k"); err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("a look with one unit left: %+v, %v; want admitted, nothing left after it", d, err)
	}
	if d := allow(t, l, "k", 1); !d.Allowed || d.Source != observe.SourceStore {
		t.Fatalf("the request after the look: %+v; want admitted by Redis", d)
	}
	denyAll(t, f, l, "k", 1, 0, observe.SourceDenialCache) // that one spent the quota
}

// What is not exact is not cached: a denial of the sliding counter (its Retry-After is an
// upper bound), of a policy that opts out (Policy.NoDenialCache), of a list that holds
// in-flight slots, and every denial once WithDenialCache(0) turned the cache off, each call
// Redis every time.
func TestDenialCacheOnlyWhereExact(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []ratelimit.RedisOption
		policies []ratelimit.Policy
	}{
		{"sliding counter", nil, []ratelimit.Policy{{Limit: 2, Window: time.Minute, Algorithm: algorithms.SlidingCounter{}}}},
		{"NoDenialCache", nil, []ratelimit.Policy{{Limit: 2, Window: time.Minute, NoDenialCache: true}}},
		{"in-flight beside", nil, []ratelimit.Policy{{Name: "rate", Limit: 2, Window: time.Minute}, {Name: "slots", Limit: 10, Window: time.Minute, Algorithm: algorithms.InFlight{}}}},
		{"WithDenialCache(0)", []ratelimit.RedisOption{ratelimit.WithDenialCache(0)}, []ratelimit.Policy{{Limit: 2, Window: time.Minute}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFaultyRedis(t, tc.opts...)
			l := mustNew(t, f.store, tc.policies...)
			allow(t, l, "k", 2)
			before := f.sent()
			denyAll(t, f, l, "k", 10, time.Second, observe.SourceStore)
			if calls := f.sent() - before; calls != 10 {
				t.Fatalf("10 denied requests made %d calls to Redis; want 10", calls)
			}
		})
	}
	// A policy that opts out still rides on another's denial: the request is denied as long.
	f := newFaultyRedis(t)
	l := mustNew(t, f.store, ratelimit.Policy{Name: "cached", Limit: 2, Window: time.Minute},
		ratelimit.Policy{Name: "asks", Limit: 2, Window: time.Minute, NoDenialCache: true})
	allow(t, l, "k", 2)
	before := f.sent()
	denyAll(t, f, l, "k", 1, 0, observe.SourceStore)
	denyAll(t, f, l, "k", 10, time.Second, observe.SourceDenialCache)
	if calls := f.sent() - before; calls != 1 {
		t.Fatalf("denied by both policies: %d calls to Redis; want 1", calls)
	}
}

// A refund or a reset through this process ends the identity's cached denials at once, under
// every policy list that shares a policy with it (here a refund through another limiter); a
// limit changed in this process is another list, which the cache does not answer.
func TestDenialCacheInvalidated(t *testing.T) {
	f := newFaultyRedis(t)
	p := ratelimit.Policy{Name: "api", Limit: 1, Window: time.Hour, Algorithm: algorithms.FixedWindow{}}
	wide := mustNew(t, f.store, p, ratelimit.Policy{Name: "daily", Limit: 100, Window: 24 * time.Hour})
	narrow := mustNew(t, f.store, p)

	charged := allow(t, narrow, "k", 1)
	denyAll(t, f, wide, "k", 1, 0, observe.SourceStore)
	denyAll(t, f, wide, "k", 1, time.Second, observe.SourceDenialCache)
	if err := narrow.Settle(ctx, "k", charged, 0); err != nil {
		t.Fatal(err)
	}
	if d := allow(t, wide, "k", 1); !d.Allowed || d.Source != observe.SourceStore {
		t.Fatalf("after a refund through another limiter: %+v; want admitted by Redis", d)
	}

	deniedByTheCache(t, wide, "k")
	if err := wide.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if d := allow(t, wide, "k", 1); !d.Allowed || d.Source != observe.SourceStore {
		t.Fatalf("after a reset: %+v; want admitted by Redis", d)
	}

	deniedByTheCache(t, wide, "k")
	raised := p
	raised.Limit = 5
	if d := allow(t, mustNew(t, f.store, raised), "k", 1); !d.Allowed || d.Source != observe.SourceStore {
		t.Fatalf("under a raised limit: %+v; want admitted by Redis", d)
	}
}

// deniedByTheCache waits until a request of key through l, which Redis would deny, is denied
// by the denial cache. The admission that spent the quota foretold that denial, but this
// process's own announcement of the refund or reset before it comes a round trip later (see
// forgets.go), and may forget it: Redis then denies the next request, which is remembered.
func deniedByTheCache(t *testing.T, l *ratelimit.Limiter, key string) {
	t.Helper()
	waitFor(t, "a denial by the cache", func() bool {
		d := allow(t, l, key, 1)
		if d.Allowed {
			t.Fatalf("%+v; want denied", d)
		}
		return d.Source == observe.SourceDenialCache
	})
}

// While Redis is down, a client Redis denied until T is still denied until T, by the cache,
// rather than let through by the fail mode; the identities Redis had not denied fail.
func TestDenialCacheOutlivesAnOutage(t *testing.T) {
	f := newFaultyRedis(t)
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 1, Window: time.Hour})
	allow(t, l, "denied", 1)
	denyAll(t, f, l, "denied", 1, 0, observe.SourceDenialCache) // foretold by the admission that spent the quota
	f.proxy.Refuse()
	denyAll(t, f, l, "denied", 10, time.Minute, observe.SourceDenialCache)
	if _, err := l.Allow(ctx, "other"); err == nil {
		t.Fatal("another identity while Redis refuses connections: no error")
	}
}

// A refund or a reset made by another instance, or by the ratelimit command, ends the
// denials this instance caches a message later: Redis announces each to every instance that
// caches denials (see forgets.go), on one server and across a Cluster's nodes, for an
// identity written as it is and for one the keys hold as a digest.
func TestDenialCacheHearsTheFleet(t *testing.T) {
	for _, e := range []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
	}{
		{"redis", func(t *testing.T) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
		}},
		{"cluster", func(t *testing.T) redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Clone(redistest.Cluster(t).Options().Addrs)})
		}},
	} {
		for _, form := range []string{"plain", "digest", "compact"} {
			id := "user:7"
			if form == "digest" {
				id = "an identity of spaces, {braces} and more than sixty-four bytes, held as a digest"
			}
			t.Run(e.name+"/"+form, func(t *testing.T) {
				clock, prefix := newFakeClock(), redistest.Prefix(t)
				opts := []ratelimit.RedisOption{ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix)}
				if form == "compact" { // announced on "forget", naming the identity's digest
					opts = append(opts, ratelimit.WithCompactState())
				}
				instance := func() ratelimit.Store {
					c := e.client(t)
					t.Cleanup(func() { _ = c.Close() })
					s := ratelimit.NewRedisStore(c, opts...)
					waitHearing(t, s)
					return s
				}
				a, b := instance(), instance()
				p := ratelimit.Policy{Limit: 2, Window: time.Hour, Algorithm: algorithms.FixedWindow{}}
				la, lb := mustNew(t, a, p), mustNew(t, b, p)
				denied := func() { // a's last admission spent the quota and foretold the denial
					t.Helper()
					for range 2 {
						if d := allow(t, la, id, 1); d.Allowed || d.Source != observe.SourceDenialCache {
							t.Fatalf("%+v; want denied by the cache", d)
						}
					}
				}
				forgotten := func(what string) {
					t.Helper()
					waitFor(t, what+" to reach the other instance", func() bool { return ratelimit.DenialCacheLen(a) == 0 })
					if d := allow(t, la, id, 1); !d.Allowed || d.Source != observe.SourceStore {
						t.Fatalf("after %s by the other instance: %+v; want admitted by Redis", what, d)
					}
				}

				charged := allow(t, lb, id, 1)
				allow(t, la, id, 1)
				denied()
				if err := lb.Settle(ctx, id, charged, 0); err != nil {
					t.Fatal(err)
				}
				forgotten("a refund")

				denied()
				if err := lb.Reset(ctx, id); err != nil {
					t.Fatal(err)
				}
				forgotten("a reset")
			})
		}
	}
}

// After a Sentinel failover the denial caches hear the fleet again, on the new primary: each
// instance's subscription breaks with the old primary, is made again where the Sentinel now
// points, and a refund by one instance ends the denial the other caches.
func TestDenialCacheHearsAfterSentinelFailover(t *testing.T) {
	g := redistest.Sentinel(t)
	prefix := redistest.Prefix(t)
	instance := func() (ratelimit.Store, *recorder) {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: g.MasterName, SentinelAddrs: g.SentinelAddrs, DialTimeout: 200 * time.Millisecond})
		t.Cleanup(func() { _ = c.Close() })
		obs := newRecorder()
		// Redis's clock: the breaker the failover opens probes again on real time.
		s := ratelimit.NewRedisStore(c, ratelimit.WithPrefix(prefix), ratelimit.WithObserver(obs.observer()))
		waitHearing(t, s)
		return s, obs
	}
	a, obsA := instance()
	b, obsB := instance()
	g.KillPrimary(t)
	for _, obs := range []*recorder{obsA, obsB} {
		waitFor(t, "the subscription to break and be made again on the new primary", func() bool {
			return slices.Equal(obs.deafReports(), []bool{true, false, true, false})
		})
	}
	p := ratelimit.Policy{Limit: 2, Window: time.Hour} // GCRA on Redis's clock: no window ends meanwhile
	la, lb := mustNew(t, a, p), mustNew(t, b, p)
	var charged ratelimit.Decision
	waitFor(t, "the new primary to admit", func() bool {
		d, err := lb.Allow(ctx, "user:7")
		charged = d
		return err == nil && d.Allowed && d.Source == observe.SourceStore
	})
	allow(t, la, "user:7", 1) // spends the quota: foretells the denial
	for range 2 {
		if d := allow(t, la, "user:7", 1); d.Allowed || d.Source != observe.SourceDenialCache {
			t.Fatalf("%+v; want denied by the cache", d)
		}
	}
	if err := lb.Settle(ctx, "user:7", charged, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the refund to reach the other instance", func() bool { return ratelimit.DenialCacheLen(a) == 0 })
	if d := allow(t, la, "user:7", 1); !d.Allowed || d.Source != observe.SourceStore {
		t.Fatalf("after the refund by the other instance: %+v; want admitted by Redis", d)
	}
}

// When the subscription breaks, the cache remembers no new denial until it is back, and then
// forgets every denial it held (announcements may have been missed meanwhile). The observer is
// told each time the cache becomes deaf and hears again, from the store's start.
func TestDenialCacheDeafForgets(t *testing.T) {
	f := newFaultyRedis(t, ratelimit.WithBreaker(0, 0))
	deaf := func(want ...bool) {
		t.Helper()
		if got := f.obs.deafReports(); !slices.Equal(got, want) {
			t.Fatalf("DenialCacheDeaf reported %v; want %v", got, want)
		}
	}
	deaf(true, false) // deaf until subscribed
	l := mustNew(t, f.store, ratelimit.Policy{Limit: 1, Window: time.Hour})
	allow(t, l, "k", 1)
	denyAll(t, f, l, "k", 2, time.Second, observe.SourceDenialCache) // foretold by the admission
	f.proxy.Refuse()
	waitFor(t, "the cache to notice the broken subscription", func() bool { return !ratelimit.DenialCacheHears(f.store) })
	deaf(true, false, true)
	if err := f.proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the subscription to be back", func() bool { return ratelimit.DenialCacheHears(f.store) })
	deaf(true, false, true, false)
	if n := ratelimit.DenialCacheLen(f.store); n != 0 {
		t.Fatalf("the cache holds %d denials after its subscription came back; want 0", n)
	}
	denyAll(t, f, l, "k", 1, 0, observe.SourceStore)
	denyAll(t, f, l, "k", 1, time.Second, observe.SourceDenialCache)
}

// A subscription whose connection stalls (the peer stops answering, and the kernel would take
// many minutes to give up) is noticed: a PING on a quiet subscription that brings no pong within
// the interval counts as a break, the cache goes deaf, and a new subscription is made on a new
// connection, which hears again once the peer answers. A client that sets no read deadline
// (ReadTimeout -1) goes deaf too; its new subscription may wait on a connection that never
// answers (docs/outages.md, the denial cache), so only that is asserted of it.
func TestDenialCacheNoticesAStalledSubscription(t *testing.T) {
	for _, readTimeout := range []time.Duration{0, -1} {
		t.Run(fmt.Sprintf("ReadTimeout=%v", readTimeout), func(t *testing.T) {
			ratelimit.SetPingEvery(t, 50*time.Millisecond)
			proxy := faultproxy.Start(t, redistest.Addr(t))
			client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ReadTimeout: readTimeout})
			obs := newRecorder()
			store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithObserver(obs.observer()))
			waitHearing(t, store)
			proxy.BlackHole()
			waitFor(t, "the cache to take the stalled subscription for broken", func() bool { return !ratelimit.DenialCacheHears(store) })
			if got := obs.deafReports(); !slices.Equal(got, []bool{true, false, true}) {
				t.Fatalf("DenialCacheDeaf reported %v; want [true false true]", got)
			}
			if readTimeout < 0 {
				return
			}
			if err := proxy.Heal(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "a new subscription to be confirmed", func() bool { return ratelimit.DenialCacheHears(store) })
			if got := obs.deafReports(); !slices.Equal(got, []bool{true, false, true, false}) {
				t.Fatalf("DenialCacheDeaf reported %v; want [true false true false]", got)
			}
			if err := client.Close(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the listener to end", func() bool { return len(obs.deafReports()) == 4 && !ratelimit.Listening(store) })
		})
	}
}

// A subscription the server refuses (an ACL user without the channel) is logged at once, as a
// start that does not hear, and the cache stays deaf; once the user may use the channel, a new
// subscription is made and heard.
func TestDenialCacheSubscriptionRefused(t *testing.T) {
	ratelimit.SetPingEvery(t, 50*time.Millisecond)
	admin := redistest.Standalone(t)
	user := strings.ReplaceAll(redistest.Prefix(t), ":", "-") + "user"
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all", "resetchannels").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
	var logged syncBuffer
	obs := newRecorder()
	client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), Username: user, Password: "pw"})
	t.Cleanup(func() { client.Close() })
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithObserver(obs.observer()),
		ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	waitFor(t, "a warning that the cache does not hear", func() bool {
		return strings.Contains(logged.String(), "does not hear refunds and resets yet") && strings.Contains(logged.String(), "NOPERM")
	})
	if ratelimit.DenialCacheHears(store) || !slices.Equal(obs.deafReports(), []bool{true}) {
		t.Fatalf("refused: hears %v, DenialCacheDeaf %v; want deaf", ratelimit.DenialCacheHears(store), obs.deafReports())
	}
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "allchannels").Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the subscription once the channel is allowed", func() bool { return ratelimit.DenialCacheHears(store) })
	if n := strings.Count(logged.String(), "does not hear"); n != 1 {
		t.Errorf("the refusal was logged %d times; want once:\n%s", n, logged.String())
	}
}

// A store closed while its cache hears reports nothing: the cache was not deaf, and closing
// the client (which closes the subscription's connection under its read) is no break.
func TestDenialCacheClosedWhileHearing(t *testing.T) {
	obs := newRecorder()
	client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	store := ratelimit.NewRedisStore(client, ratelimit.WithObserver(obs.observer()), ratelimit.WithPrefix(redistest.Prefix(t)))
	waitHearing(t, store)
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // room for a wrong report; none is awaited
	if got := obs.deafReports(); !slices.Equal(got, []bool{true, false}) {
		t.Fatalf("DenialCacheDeaf reported %v after the client was closed; want [true false] (nothing more)", got)
	}
}

// A store whose Redis refuses connections from the start has a deaf denial cache, which the
// observer is told at once; closing the client ends it, and the observer is told that too, so
// that a count of deaf caches does not keep a store that is gone.
func TestDenialCacheDeafUntilClosed(t *testing.T) {
	obs := newRecorder()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	ratelimit.NewRedisStore(client, ratelimit.WithObserver(obs.observer()), ratelimit.WithPrefix(redistest.Prefix(t)))
	waitFor(t, "the store to report its cache deaf", func() bool { return len(obs.deafReports()) > 0 })
	time.Sleep(150 * time.Millisecond) // a failed subscription or two; no wait is asserted
	if got := obs.deafReports(); !slices.Equal(got, []bool{true}) {
		t.Fatalf("DenialCacheDeaf reported %v with Redis refusing; want [true]", got)
	}
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the closed store to report its cache no longer deaf", func() bool { return len(obs.deafReports()) == 2 })
	if got := obs.deafReports(); !slices.Equal(got, []bool{true, false}) {
		t.Fatalf("DenialCacheDeaf reported %v; want [true false]", got)
	}
}
