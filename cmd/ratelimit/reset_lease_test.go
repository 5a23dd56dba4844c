package main

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// TestResetReachesLeases: an application serves a hot identity from quota leases (a store
// that does not hear the fleet, so no announcement reaches it) when the operator resets the
// identity with the command. From the reset on, the application admits at most the limit:
// the units its lease held are neither handed out on top of the new count nor refunded into
// it (they were both: the limit and what the lease held).
func TestResetReachesLeases(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient, addr string) {
		prefix := redistest.Prefix(t)
		clock := fakeclock.New(fakeclock.T0)
		policy := ratelimit.Policy{Name: "api", Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Minute}
		store := ratelimit.NewRedisStore(client, ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix), ratelimit.WithDenialCache(0))
		t.Cleanup(func() { _ = store.Close() })
		app, err := ratelimit.New(store, policy)
		if err != nil {
			t.Fatal(err)
		}
		plainPolicy := policy
		plainPolicy.Lease = 0
		plain, err := ratelimit.New(ratelimit.NewRedisStore(client, ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix)), plainPolicy)
		if err != nil {
			t.Fatal(err)
		}
		spend := func(l *ratelimit.Limiter, n int) int {
			admitted := 0
			for range n {
				d, err := l.Allow(t.Context(), "tenant")
				if err != nil {
					t.Fatal(err)
				}
				if !d.Allowed {
					break
				}
				admitted++
			}
			return admitted
		}
		before := spend(app, 20)
		if d, err := plain.AllowN(t.Context(), "tenant", 0); err != nil || int(policy.Limit-d.Remaining) <= before {
			t.Fatalf("20 requests left no lease holding units: %+v, %v", d, err)
		}
		cli(t, "reset", "-redis", addr, "-prefix", prefix, "-policy", "name=api,limit=1000,window=1h,algorithm=fixed_window", "tenant").
			want(t, 0, "RESET POLICY", "")
		after := spend(app, 30) + spend(plain, 2000)
		clock.Advance(2 * time.Minute) // the lease's time ends: its refund reaches Redis after the reset
		after += spend(app, 2000)
		time.Sleep(50 * time.Millisecond)
		after += spend(plain, 2000)
		if after > int(policy.Limit) || after < int(policy.Limit)*3/4 {
			t.Errorf("after the command's reset the application admitted %d; want at most the limit, %d, and most of it", after, policy.Limit)
		}
	})
}
