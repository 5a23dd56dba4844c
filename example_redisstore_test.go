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
