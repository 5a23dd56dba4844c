package ratelimit_test

import (
	"context"
	"net"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// The breaker closes at its first probe after Redis answers again, in every outage of one
// store, not only the first (issue 34: in a second outage "closed" came 275–955 ms after Redis
// was back, against ~75 ms in the first). go-redis's pool, once PoolSize dials have failed in
// its lifetime, answers every later dial with the last dial error, without dialling, until a
// background goroutine's dial succeeds, and that goroutine tries once a second. The client's
// pool is small so that each outage saturates it within a few probes, as a burst of
// concurrent requests at an outage's start does with the default pool.
//
// The breaker runs on the fake clock: each outage is three probes refused, then Redis is
// healed and the clock moves on by the cool-down, and the next check, the probe, must close
// the breaker. Nothing here waits on real time but for that probe's own round trips (bounded
// by 10 s however busy the machine); the pool's background dialer, left alone, would make the
// probe fail with its cached error for up to a second.
func TestBreakerRecoversEveryOutage(t *testing.T) {
	proxy := faultproxy.Start(t, redistest.Addr(t))
	// The test counts the failed dials of the pool's background dialer, which go-redis makes
	// from ConnPool.tryDial (a go-redis that renamed it fails the test at the wait below).
	var background atomic.Int64
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil && strings.Contains(string(debug.Stack()), "pool.(*ConnPool).tryDial") {
			background.Add(1)
		}
		return conn, err
	}
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), PoolSize: 2, ContextTimeoutEnabled: true, DialTimeout: time.Second, Dialer: dial})
	t.Cleanup(func() { client.Close() })
	clock, obs := newFakeClock(), newRecorder()
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithClock(clock),
		ratelimit.WithObserver(obs), ratelimit.WithDenialCache(0))
	l := mustNew(t, store, ratelimit.Policy{Limit: 1_000_000, Window: time.Hour})
	check := func() error {
		c, cancel := generous()
		defer cancel()
		_, err := l.Allow(c, "k")
		return err
	}
	if err := check(); err != nil {
		t.Fatal(err)
	}
	for outage := 1; outage <= 3; outage++ {
		proxy.Refuse()
		// The first check fails, or finds the breaker opened already by a dial of the
		// client's that failed first.
		if err := check(); observe.ErrorKind(err) != "unavailable" && observe.ErrorKind(err) != "breaker_open" {
			t.Fatalf("outage %d: the first check: %v; want unavailable or breaker_open", outage, err)
		}
		before := background.Load()
		for i := range 3 {
			clock.Advance(breakerCooldown)
			if err := check(); observe.ErrorKind(err) != "unavailable" {
				t.Fatalf("outage %d: probe %d: %v; want unavailable (Redis refusing)", outage, i+1, err)
			}
		}
		// Redis stays down until the pool's background dialer has tried too, as in any
		// outage longer than a few milliseconds.
		for deadline := time.Now().Add(10 * time.Second); background.Load() == before; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("outage %d: the pool's background dialer never dialled", outage)
			}
		}
		if err := proxy.Heal(); err != nil {
			t.Fatal(err)
		}
		clock.Advance(breakerCooldown)
		began := time.Now()
		if err := check(); err != nil {
			t.Fatalf("outage %d: the first probe after Redis came back: %v (after %v); want the breaker closed by it", outage, err, time.Since(began))
		}
		if _, _, b := obs.snapshot(); len(b) == 0 || b[len(b)-1] != observe.BreakerClosed {
			t.Fatalf("outage %d: breaker changes %v; want closed last", outage, b)
		}
		t.Logf("outage %d: the probe closed the breaker in %v", outage, time.Since(began))
	}
}
