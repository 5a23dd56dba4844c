package ratelimitotel_test

import (
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/outagespec"
	"github.com/a7d3e0dd/ratelimit/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// Through a real Redis: a denial answered by the denial cache, and the breaker opening on a
// refused connection and closing when a probe succeeds after the cool-down (on a fake clock).
func TestRedis(t *testing.T) {
	proxy := faultproxy.Start(t, redistest.Addr(t))
	clock := fakeclock.New(fakeclock.T0)
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, DialTimeout: time.Second})
	t.Cleanup(func() { client.Close() })
	m := newMeter(t)
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithClock(clock),
		ratelimit.WithBreaker(1, time.Second), ratelimit.WithDenialCache(100), ratelimit.WithObserver(m))
	l := mustNew(t, store, ratelimit.Policy{Name: "one", Limit: 1, Window: time.Hour})
	for i, want := range []struct {
		allowed bool
		source  ratelimit.Source
	}{{true, ratelimit.SourceStore}, {false, ratelimit.SourceStore}, {false, ratelimit.SourceDenialCache}} {
		d, err := allow(l, "k")
		if err != nil || d.Allowed != want.allowed || d.Source != want.source {
			t.Fatalf("request %d: allowed %v from the %v (%v); want %v from the %v", i+1, d.Allowed, d.Source, err, want.allowed, want.source)
		}
	}
	proxy.Refuse()
	if _, err := allow(l, "other"); err == nil {
		t.Fatal("a check with Redis refusing connections succeeded")
	}
	m.breaker(t, 1, 1, 0)
	if err := proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if d, err := allow(l, "third"); err != nil || !d.Allowed {
		t.Fatalf("the probe after the cool-down: %+v, %v; want allowed", d, err)
	}
	for _, c := range []struct {
		outcome, source string
		want            int64
	}{{"allowed", "store", 2}, {"denied", "store", 1}, {"denied", "denial_cache", 1}, {"allowed", "denial_cache", 0}} {
		if got := m.decisions(t, "one", c.outcome, c.source); got != c.want {
			t.Errorf("decisions{outcome=%s, source=%s} %d, want %d", c.outcome, c.source, got, c.want)
		}
	}
	m.breaker(t, 0, 1, 1)
}

// Over a scripted outage (Redis killed and restarted), the requests counted by result equal
// the responses by status.
func TestOutageCountsEqualResponses(t *testing.T) {
	m := newMeter(t)
	outagespec.Run(t, m.Observer, func(result string) float64 {
		return float64(m.sum(t, "ratelimit.requests", attribute.String("ratelimit.result", result)))
	})
}
