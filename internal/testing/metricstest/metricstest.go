// Package metricstest holds what the tests of the two metrics modules (ratelimit/prometheus,
// ratelimit/otel) share: limiters, and Redis clients that fail in the ways the observers count.
package metricstest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// NopObserver returns an Observer whose every hook is set and does nothing: what reporting
// itself costs the core, for the benchmarks.
func NopObserver() *ratelimit.Observer {
	return &ratelimit.Observer{
		Decided:             func(ratelimit.DecisionEvent) {},
		Answered:            func(observe.RequestEvent) {},
		StoreFailed:         func(error) {},
		BreakerChanged:      func(_, _ observe.BreakerState) {},
		MemoryStoreFull:     func(bool) {},
		KeyFellBack:         func(string) {},
		RedisEvictionPolicy: func(string, bool) {},
		DenialCacheDeaf:     func(bool) {},
		StoreDegraded:       func(string, bool) {},
		SlotHeld:            func(bool, time.Duration) {},
		Queued:              func(bool) {},
		Held:                func(observe.HoldEvent) {},
	}
}

// MustNew returns a limiter of policies over store, failing the test when New fails.
func MustNew(t testing.TB, store ratelimit.Store, policies ...ratelimit.Policy) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(store, policies...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Allow checks one request from key within the guard's default deadline.
func Allow(l *ratelimit.Limiter, key string) (ratelimit.Decision, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	return l.Allow(ctx, key)
}

// RefusedRedis is a Redis client of an address that refuses connections.
func RefusedRedis(t testing.TB) *redis.Client {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	return client
}

// SilentRedis is a Redis client of a peer that accepts connections and never answers.
func SilentRedis(t testing.TB) *redis.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read
			mu.Unlock()
		}
	}()
	client := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ContextTimeoutEnabled: true})
	t.Cleanup(func() {
		client.Close()
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return client
}
