package ratelimitprom_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/outagespec"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
	ratelimitprom "github.com/a7d3e0dd/ratelimit/prometheus"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// Through a real Redis: a denial answered by the denial cache, and the breaker opening on a
// refused connection and closing when a probe succeeds after the cool-down (on a fake clock).
func TestRedis(t *testing.T) {
	proxy := faultproxy.Start(t, redistest.Addr(t))
	clock := fakeclock.New(fakeclock.T0)
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, DialTimeout: time.Second})
	t.Cleanup(func() { client.Close() })
	obs := ratelimitprom.New()
	seen, hearing := outagespec.Hearing(obs.Hooks())
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithClock(clock),
		ratelimit.WithBreaker(1, time.Second), ratelimit.WithDenialCache(100), ratelimit.WithObserver(seen))
	l := mustNew(t, store, ratelimit.Policy{Name: "one", Limit: 2, Window: time.Hour})
	hearing(t) // the cache caches denials once it hears refunds
	for i, want := range []struct {
		allowed bool
		source  observe.Source
	}{{true, observe.SourceStore}, {false, observe.SourceStore}, {false, observe.SourceDenialCache}} {
		cost := int64(1)
		if i == 0 {
			cost = 2 // spends the quota at a cost of 2: foretells no denial (a cost of 1 would)
		}
		d, err := l.AllowN(context.Background(), "k", cost)
		if err != nil || d.Allowed != want.allowed || d.Source != want.source {
			t.Fatalf("request %d: allowed %v from the %v (%v); want %v from the %v", i+1, d.Allowed, d.Source, err, want.allowed, want.source)
		}
	}
	proxy.Refuse()
	if _, err := allow(l, "other"); err == nil {
		t.Fatal("a check with Redis refusing connections succeeded")
	}
	if got := value(t, obs, "ratelimit_breaker_open", ""); got != 1 {
		t.Errorf("ratelimit_breaker_open %v after the failure, want 1", got)
	}
	if err := proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if d, err := allow(l, "third"); err != nil || !d.Allowed {
		t.Fatalf("the probe after the cool-down: %+v, %v; want allowed", d, err)
	}
	for labels, want := range map[string]float64{
		"outcome=allowed,policy=one,shadow=false,source=store":        2,
		"outcome=denied,policy=one,shadow=false,source=store":         1,
		"outcome=denied,policy=one,shadow=false,source=denial_cache":  1,
		"outcome=allowed,policy=one,shadow=false,source=denial_cache": 0,
	} {
		if got := value(t, obs, "ratelimit_decisions_total", labels); got != want {
			t.Errorf("decisions{%s} %v, want %v", labels, got, want)
		}
	}
	if got := value(t, obs, "ratelimit_breaker_open", ""); got != 0 {
		t.Errorf("ratelimit_breaker_open %v after the probe succeeded, want 0", got)
	}
	for to, want := range map[string]float64{"open": 1, "closed": 1} {
		if got := value(t, obs, "ratelimit_breaker_transitions_total", "to="+to); got != want {
			t.Errorf("transitions to %s: %v, want %v", to, got, want)
		}
	}
}

// ratelimit_denial_caches_deaf counts the Redis stores whose denial cache does not hear the
// fleet's refunds and resets: none once they are subscribed, one while a store's Redis refuses
// connections (its subscription broken), none again when it is back.
func TestDenialCachesDeaf(t *testing.T) {
	obs := ratelimitprom.New()
	outagespec.DeafCache(t, obs.Hooks(), func() (float64, bool) {
		_, ok := gather(t, obs)["ratelimit_denial_caches_deaf"]
		return value(t, obs, "ratelimit_denial_caches_deaf", ""), ok
	})
}

// Over a scripted outage (Redis killed and restarted), the requests counted by result equal
// the responses by status.
func TestOutageCountsEqualResponses(t *testing.T) {
	obs := ratelimitprom.New()
	outagespec.Run(t, obs.Hooks(), func(result string) float64 {
		return value(t, obs, "ratelimit_requests_total", "result="+result)
	})
}

// ratelimit_stores_degraded counts the stores running without a feature, as a user meets
// each: a store over a Ring has no denial cache, a store whose server refuses merged checks
// sends them one by one.
func TestStoresDegraded(t *testing.T) {
	obs := ratelimitprom.New()
	outagespec.Degraded(t, obs.Hooks(), func(feature string) (float64, bool) {
		if m := sample(t, obs, "ratelimit_stores_degraded", "feature="+feature); m != nil {
			return m.GetGauge().GetValue(), true
		}
		return 0, false
	})
}
