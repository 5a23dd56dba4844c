package ratelimit_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// TestMain provides Redis to the examples that read its address as a program would.
func TestMain(m *testing.M) {
	os.Exit(redistest.Main(m, "ExampleNewRedisStore", "ExampleWithHashState"))
}

// engine makes a store for one test: every engine of the conformance suite.
type engine struct {
	name  string
	store func(t *testing.T, opts ...ratelimit.StoreOption) ratelimit.Store
}

var engines = []engine{
	{"memory", func(t *testing.T, opts ...ratelimit.StoreOption) ratelimit.Store {
		return ratelimit.NewMemoryStore(opts...)
	}},
	{"redis", func(t *testing.T, opts ...ratelimit.StoreOption) ratelimit.Store {
		return redisStore(t, redistest.Standalone(t), optionsOf[ratelimit.RedisOption](opts)...)
	}},
	{"cluster", func(t *testing.T, opts ...ratelimit.StoreOption) ratelimit.Store {
		return redisStore(t, redistest.Cluster(t), optionsOf[ratelimit.RedisOption](opts)...)
	}},
	// Hash state (WithHashState): a hash per identity, a field per policy.
	{"redis-hash", func(t *testing.T, opts ...ratelimit.StoreOption) ratelimit.Store {
		return redisStore(t, redistest.Standalone(t), append(optionsOf[ratelimit.RedisOption](opts), ratelimit.WithHashState())...)
	}},
	{"cluster-hash-compact", func(t *testing.T, opts ...ratelimit.StoreOption) ratelimit.Store {
		return redisStore(t, redistest.Cluster(t), append(optionsOf[ratelimit.RedisOption](opts), ratelimit.WithHashState(), ratelimit.WithCompactState())...)
	}},
	// Compact keys (WithCompactState) on a Cluster: the tests' injected clocks keep TATs in
	// values (TestCompactState* keep them in expiry, on the server's clock).
	{"cluster-compact", func(t *testing.T, opts ...ratelimit.StoreOption) ratelimit.Store {
		return redisStore(t, redistest.Cluster(t), append(optionsOf[ratelimit.RedisOption](opts), ratelimit.WithCompactState())...)
	}},
}

// optionsOf returns the options of both stores as the options of one.
func optionsOf[O any](opts []ratelimit.StoreOption) []O {
	out := make([]O, len(opts))
	for i, o := range opts {
		out[i] = any(o).(O)
	}
	return out
}

// redisStore returns a Redis store under a prefix of the test's own, and checks after the test
// that every key it left has an expiry.
func redisStore(t *testing.T, client redis.UniversalClient, opts ...ratelimit.RedisOption) ratelimit.Store {
	prefix := redistest.Prefix(t)
	t.Cleanup(func() { assertAllKeysExpire(t, client, prefix) })
	return ratelimit.NewRedisStore(client, append([]ratelimit.RedisOption{ratelimit.WithPrefix(prefix)}, opts...)...)
}

// compactKeys matches the keys of compact state (see ratelimit.StorageKey, compact), which hold
// no prefix: those of every test.
const compactKeys = "{????}????????"

// assertAllKeysExpire fails the test when a key under prefix, or a compact key, has no TTL.
func assertAllKeysExpire(t *testing.T, client redis.UniversalClient, prefix string) {
	ctx := context.Background()
	checkPattern := func(ctx context.Context, c *redis.Client, pattern string) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			ttl, err := c.PTTL(ctx, iter.Val()).Result()
			if err != nil {
				return err
			}
			if ttl == -1*time.Nanosecond || ttl < 0 && ttl != -2*time.Nanosecond {
				t.Errorf("key %q has no expiry (PTTL %v)", iter.Val(), ttl)
			}
		}
		return iter.Err()
	}
	check := func(ctx context.Context, c *redis.Client) error {
		for _, pattern := range []string{prefix + "*", compactKeys} {
			if err := checkPattern(ctx, c, pattern); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	switch c := client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, check)
	case *redis.Ring:
		err = c.ForEachShard(ctx, check)
	case *redis.Client:
		err = check(ctx, c)
	}
	if err != nil {
		t.Errorf("scanning for keys without expiry: %v", err)
	}
}

// forEachEngine runs f once per engine, each with a fake clock and its own store.
func forEachEngine(t *testing.T, f func(t *testing.T, store ratelimit.Store, clock *fakeClock)) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			clock := newFakeClock()
			f(t, e.store(t, ratelimit.WithClock(clock)), clock)
		})
	}
}

func keyOf(t *testing.T) string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
}
