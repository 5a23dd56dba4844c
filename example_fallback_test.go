package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
)

// Keep limiting while Redis is down: after one failure the breaker stops calling Redis, and the
// local fallback decides under this instance's share of each limit — here half of 4 per
// minute.
func ExampleWithFallback() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true}) // nothing listens there
	defer rdb.Close()
	store := ratelimit.NewRedisStore(rdb, ratelimit.WithBreaker(1, time.Minute), ratelimit.WithFallback(0.5))
	limiter, err := ratelimit.New(store, ratelimit.Policy{Limit: 4, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		d, err := limiter.Allow(ctx, "user:42")
		cancel()
		fmt.Println(d.Allowed, d.Remaining, d.Source, err)
	}
	// Output:
	// true 1 fallback <nil>
	// true 0 fallback <nil>
	// false 0 fallback <nil>
}
