package outagespec

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// DeafCache drives a subscription outage: two Redis stores report to obs, one of them through
// a proxy that refuses connections for a while, so its denial cache stops hearing the fleet's
// refunds and resets and hears them again. deaf returns what obs counts as deaf caches now,
// and ok false while it has recorded nothing. It must read 0 once both are subscribed, 1
// while the proxy refuses, and 0 again when it is back.
func DeafCache(t *testing.T, obs *ratelimit.Observer, deaf func() (n float64, ok bool)) {
	t.Helper()
	proxy := faultproxy.Start(t, redistest.Addr(t))
	hooks, seen := countDeaf(obs)
	for _, addr := range []string{proxy.Addr(), redistest.Addr(t)} {
		client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second})
		t.Cleanup(func() { client.Close() })
		ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithObserver(hooks))
	}
	// Both stores deaf at start and then subscribed, as the reports go through obs: only then
	// can a count of 1 come from a break.
	for deadline := time.Now().Add(20 * time.Second); seen.deaf.Load() != 2 || seen.hearing.Load() != 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the stores reported %d caches deaf and %d hearing after 20 s; want 2 and 2", seen.deaf.Load(), seen.hearing.Load())
		}
	}
	until := func(what string, want float64) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			n, ok := deaf()
			if ok && n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v deaf denial caches after 20 s (recorded: %v), want %v", what, n, ok, want)
			}
		}
	}
	until("both stores subscribed", 0)
	proxy.Refuse()
	until("one store's Redis refusing connections", 1)
	if err := proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	until("its Redis back", 0)
}

// deafReports counts the DenialCacheDeaf reports of a store.
type deafReports struct {
	deaf, hearing atomic.Int64
}

// countDeaf returns a copy of obs whose DenialCacheDeaf hook counts each report in seen
// before it passes it on to obs's own, if any.
func countDeaf(obs *ratelimit.Observer) (hooks *ratelimit.Observer, seen *deafReports) {
	seen = &deafReports{}
	o := *obs
	next := o.DenialCacheDeaf
	o.DenialCacheDeaf = func(deaf bool) {
		if deaf {
			seen.deaf.Add(1)
		} else {
			seen.hearing.Add(1)
		}
		if next != nil {
			next(deaf)
		}
	}
	return &o, seen
}

// Hearing returns obs wrapped, for one Redis store, and a function that waits until that store
// has reported its denial cache subscribed: before, the cache caches no denial (it could not
// hear a refund that ends one), so a test of a denial answered by the cache must wait for it.
func Hearing(obs *ratelimit.Observer) (*ratelimit.Observer, func(t *testing.T)) {
	hooks, seen := countDeaf(obs)
	return hooks, func(t *testing.T) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); seen.hearing.Load() == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the store's denial cache reported no subscription after 20 s")
			}
		}
	}
}
