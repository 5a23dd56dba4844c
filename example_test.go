package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// A limiter of 2 requests per minute and 100 per hour, in memory.
func ExampleNew() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 2, Window: time.Minute}, ratelimit.Policy{Limit: 100, Window: time.Hour})
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
	clock := &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)),
		ratelimit.Policy{Name: "burst", Limit: 10, Window: time.Second},
		ratelimit.Policy{Name: "sustained", Limit: 15, Window: time.Minute, Algorithm: algorithms.SlidingLog{}})
	if err != nil {
		panic(err)
	}

	d, _ := limiter.AllowN(context.Background(), "client-42", 10)
	fmt.Println(d.Allowed, d.Policy.Name, d.Remaining)
	d, _ = limiter.AllowN(context.Background(), "client-42", 5)
	fmt.Println(d.Allowed, d.Policy.Name, d.RetryAfter)
	clock.now = clock.now.Add(time.Second)
	d, _ = limiter.AllowN(context.Background(), "client-42", 6)
	fmt.Println(d.Allowed, d.Policy.Name, d.RetryAfter)
	// Output:
	// true burst 0
	// false burst 500ms
	// false sustained 59s
}

// A policy is a plain value; New fills in a name made from it when it has none.
func ExamplePolicy() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(),
		ratelimit.Policy{Limit: 100, Window: time.Minute},
		ratelimit.Policy{Name: "api", Limit: 5, Window: time.Second, Burst: 20, Algorithm: algorithms.TokenBucket{}})
	if err != nil {
		panic(err)
	}
	d, _ := limiter.Allow(context.Background(), "client-42")
	for _, r := range d.Results() {
		fmt.Println(r.Policy.Name, r.Remaining)
	}
	// Output:
	// gcra-100-per-1m 99
	// api 19
}

// manualClock is a clock that moves only when told to: a store given it with WithClock runs
// its limits on it, which makes an example's (or a test's) output exact.
type manualClock struct{ now time.Time }

func (c *manualClock) Now() time.Time { return c.now }

func (c *manualClock) Sleep(ctx context.Context, d time.Duration) error {
	c.now = c.now.Add(d)
	return ctx.Err()
}
