package ratelimit_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// Share the limits of every instance of a service through Redis: one script call checks
// every policy of the list, atomically, on the Redis server's clock. Any go-redis client
// works: redis.NewClient, redis.NewFailoverClient (Sentinel), redis.NewClusterClient.
//
// The example reads the server's address from $REDIS_ADDR (default localhost:6379); the
// project's tests start a redis-server and set it.
func ExampleNewRedisStore() {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "localhost:6379"
	}
	client := redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true, // give up at the guard's deadline (100 ms), not ReadTimeout
	})
	defer client.Close()

	limiter, err := ratelimit.New(ratelimit.NewRedisStore(client),
		ratelimit.Policy{Name: "hourly", Limit: 3, Window: time.Hour},
		ratelimit.Policy{Name: "daily", Limit: 100, Window: 24 * time.Hour, Algorithm: algorithms.SlidingCounter{}})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	key := "user:example-" + strconv.FormatInt(time.Now().UnixNano(), 36) // new on every run
	defer limiter.Reset(ctx, key)
	for range 4 {
		d, err := limiter.Allow(ctx, key)
		if err != nil {
			panic(err) // Redis is down: observe.ErrorKind(err) == "unavailable"
		}
		fmt.Println(d.Allowed, d.Remaining, d.Policy.Name)
	}
	// Output:
	// true 2 hourly
	// true 1 hourly
	// true 0 hourly
	// false 0 hourly
}

// Keep an identity's windows in one Redis hash: a check of several policies reads and writes
// one key, whatever their number (see docs/redis.md, "Several windows: hash state").
func ExampleWithHashState() {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "localhost:6379"
	}
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer client.Close()

	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix("example:"), ratelimit.WithHashState())
	limiter, err := ratelimit.New(store,
		ratelimit.Policy{Name: "burst", Limit: 2, Window: time.Second},
		ratelimit.Policy{Name: "hourly", Limit: 100, Window: time.Hour},
		ratelimit.Policy{Name: "daily", Limit: 1000, Window: 24 * time.Hour, Algorithm: algorithms.FixedWindow{}})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	key := "user:example-" + strconv.FormatInt(time.Now().UnixNano(), 36) // new on every run
	defer limiter.Reset(ctx, key)
	for range 3 {
		d, err := limiter.Allow(ctx, key)
		if err != nil {
			panic(err)
		}
		fmt.Println(d.Allowed, d.Policy.Name)
	}
	fields, _ := client.HLen(ctx, "example:{"+key+"}").Result()
	fmt.Println(fields, "fields in one hash")
	// Output:
	// true burst
	// true burst
	// false burst
	// 3 fields in one hash
}
