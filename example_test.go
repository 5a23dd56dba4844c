package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// A limiter of 2 requests per second and 100 per hour, in memory.
func ExampleNew() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 2, Window: time.Second}, ratelimit.Policy{Limit: 100, Window: time.Hour})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		d, _ := limiter.Allow(context.Background(), "client-42")
		fmt.Println(d.Allowed, d.Remaining)
	}
	// Output:
	// true 1
	// true 0
	// false 0
}

// Every policy of a list must admit a request; the decision names the one that binds.
func ExampleLimiter_AllowN() {
	clock := newFakeClock()
	limiter := mustNew(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)),
		ratelimit.Policy{Name: "burst", Limit: 10, Window: time.Second},
		ratelimit.Policy{Name: "sustained", Limit: 15, Window: time.Minute, Algorithm: algorithms.SlidingLog{}})

	d, _ := limiter.AllowN(context.Background(), "client-42", 10)
	fmt.Println(d.Allowed, d.Policy.Name, d.Remaining)
	d, _ = limiter.AllowN(context.Background(), "client-42", 5)
	fmt.Println(d.Allowed, d.Policy.Name, d.RetryAfter)
	clock.Advance(time.Second)
	d, _ = limiter.AllowN(context.Background(), "client-42", 6)
	fmt.Println(d.Allowed, d.Policy.Name, d.RetryAfter)
	// Output:
	// true burst 0
	// false burst 500ms
	// false sustained 59s
}

func ExamplePolicy_String() {
	fmt.Println(ratelimit.Policy{Limit: 100, Window: time.Minute})
	fmt.Println(ratelimit.Policy{Name: "api", Limit: 5, Window: time.Second, Burst: 20, Algorithm: algorithms.TokenBucket{}})
	// Output:
	// 100 req/1m gcra (burst 100)
	// api: 5 req/1s token_bucket (burst 20)
}
