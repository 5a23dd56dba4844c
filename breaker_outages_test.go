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
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
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
	proxy, client, background := outageClient(t)
	recoversEveryOutage(t, proxy, client, background, 3, func() {})
}

// recoversEveryOutage runs outages of proxy, each three probes of a store over client refused
// and then Redis healed, and fails t unless the next probe closes the store's breaker; made
// is called once the store is made.
func recoversEveryOutage(t *testing.T, proxy *faultproxy.Proxy, client *redis.Client, background *atomic.Int64, outages int, made func()) {
	t.Helper()
	clock, obs := newFakeClock(), newRecorder()
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithClock(clock),
		ratelimit.WithObserver(obs.observer()), ratelimit.WithDenialCache(0))
	made()
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
	for outage := 1; outage <= outages; outage++ {
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
		waitBackgroundDial(t, background, before)
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

// outageClient returns a client through a fault proxy whose pool saturates within two failed
// dials (see TestBreakerRecoversEveryOutage), and a count of the failed dials of its pool's
// background dialer, which go-redis makes from ConnPool.tryDial (a go-redis that renamed it
// fails the tests at waitBackgroundDial).
func outageClient(t *testing.T) (*faultproxy.Proxy, *redis.Client, *atomic.Int64) {
	proxy := faultproxy.Start(t, redistest.Addr(t))
	background := new(atomic.Int64)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil && strings.Contains(string(debug.Stack()), "pool.(*ConnPool).tryDial") {
			background.Add(1)
		}
		return conn, err
	}
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), PoolSize: 2, ContextTimeoutEnabled: true, DialTimeout: time.Second, Dialer: dial})
	t.Cleanup(func() { client.Close() })
	return proxy, client, background
}

// waitBackgroundDial waits until the pool's background dialer has failed once more than
// before.
func waitBackgroundDial(t *testing.T, background *atomic.Int64, before int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); background.Load() == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the pool's background dialer never dialled")
		}
	}
}

// A store that makes no call (idle, or closed) must not slow the recovery of the client it
// was given, which the application uses too: the store holds the pool's failed background
// dial until one of its own calls needs it (redisredial.go), and with no call to wake it the
// pool dialled again only after heldFor, 10 s, against the pool's own second.
func TestClientRecoversBesideAStoreThatMakesNoCall(t *testing.T) {
	for _, closed := range []bool{false, true} {
		name := "idle"
		if closed {
			name = "closed"
		}
		t.Run(name, func(t *testing.T) {
			proxy, client, background := outageClient(t)
			store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)))
			if closed {
				store.Close()
			}
			ping := func() error {
				c, cancel := generous()
				defer cancel()
				return client.Ping(c).Err()
			}
			if err := ping(); err != nil {
				t.Fatal(err)
			}
			proxy.Refuse()
			before := background.Load()
			for range 3 { // saturates the pool: its background dialer starts
				if ping() == nil {
					t.Fatal("a ping went through a refusing proxy")
				}
			}
			waitBackgroundDial(t, background, before)
			if err := proxy.Heal(); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			for ping() != nil {
				if time.Since(began) > 30*time.Second {
					t.Fatal("the client never recovered")
				}
				time.Sleep(10 * time.Millisecond)
			}
			// The pool alone dials again a second after its failed dial; five is room for a
			// loaded machine, and half the hold that made it ten.
			if d := time.Since(began); d > 5*time.Second {
				t.Fatalf("the client answered again %v after Redis did; want within the pool's own second (5 s at most)", d)
			}
			t.Logf("the client answered again %v after Redis did", time.Since(began))
		})
	}
}

// Two stores on one client (two limiters' stores, say) each hold the pool's background dial
// in a hook of their own, one inside the other: the first probe of either after Redis is
// back must close its breaker, whichever of the two holds the dial. With the idle store's
// hook holding it, the busy store's probe waited for a dial that only the idle store's calls
// would wake, and failed at its own bound.
func TestBreakerRecoversWithTwoStoresOnOneClient(t *testing.T) {
	for _, idleFirst := range []bool{true, false} {
		name := "idle store made second"
		if idleFirst {
			name = "idle store made first"
		}
		t.Run(name, func(t *testing.T) {
			proxy, client, background := outageClient(t)
			idle := func() { ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)+"idle:")) }
			if idleFirst {
				idle()
				idle = func() {}
			}
			recoversEveryOutage(t, proxy, client, background, 2, idle)
		})
	}
}
