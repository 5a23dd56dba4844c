package outagespec

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/redistest"
)

// DeafCache drives a subscription outage: two Redis stores report to obs, one of them through
// a proxy that refuses connections for a while, so its denial cache stops hearing the fleet's
// refunds and resets and hears them again. deaf returns what obs counts as deaf caches now,
// and ok false while it has recorded nothing. It must read 0 once both are subscribed, 1
// while the proxy refuses, and 0 again when it is back.
func DeafCache(t *testing.T, obs ratelimit.Observer, deaf func() (n float64, ok bool)) {
	t.Helper()
	proxy := faultproxy.Start(t, redistest.Addr(t))
	for _, addr := range []string{proxy.Addr(), redistest.Addr(t)} {
		client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second})
		t.Cleanup(func() { client.Close() })
		ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithObserver(obs))
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
