package ratelimit

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// A hot identity that the fallback's full memory store decides on a shard's overflow quota
// gets exactly what that quota has left: the units a lease would have taken beyond each
// request go back to the overflow quota, where they were charged (they went to the identity's
// own state, which the store does not hold, and were lost to every identity the store could
// not hold: 15 of 39 admitted), and each admission reports that quota's remaining.
func TestLeaseGivesBackToTheFallbacksOverflow(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	oneAShard := redisOption(func(c *storeConfig) { c.maxKeys = memoryShards })
	store := NewRedisStore(rdb, WithFallback(1), WithDenialCache(0), WithClock(fakeclock.New(fakeclock.T0)), oneAShard)
	policy := Policy{Name: "tenant", Limit: 100, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Minute}
	l, err := New(store, policy)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Every shard full of identities that used more than half their quota: none is forgotten
	// to make room, and a new identity is decided on its shard's overflow quota.
	for i := range 20 * memoryShards {
		if _, err := l.AllowN(ctx, "filler:"+strconv.Itoa(i), 60); err != nil {
			t.Fatal(err)
		}
	}
	first, err := l.Allow(ctx, "hot")
	if err != nil || !first.Allowed || !first.Results()[0].overflow {
		t.Fatalf("the hot identity's first request: %+v, %v; want admitted on the overflow quota", first, err)
	}
	left := first.Remaining // what the overflow quota has left after it
	admitted := int64(0)
	for range 3 * left {
		d, err := l.Allow(ctx, "hot")
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
			// What it reports is the quota's, which a refund (CountIf) then goes back to.
			if !d.Results()[0].overflow || d.Remaining != left-admitted {
				t.Errorf("admission %d: overflow %v, remaining %d; want the overflow quota's, %d", admitted, d.Results()[0].overflow, d.Remaining, left-admitted)
			}
		}
	}
	if admitted != left {
		t.Errorf("a hot identity on the overflow quota with %d left: %d admitted; want %d", left, admitted, left)
	}
}
