package ratelimit_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// exampleClock is a clock that stands still until the example moves it. A store given it with
// WithClock runs its limits on it, so an example's output does not depend on how busy the
// machine is.
type exampleClock struct {
	mu  sync.Mutex
	now time.Time
}

func newExampleClock() *exampleClock {
	return &exampleClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now implements ratelimit.Clock.
func (c *exampleClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep implements ratelimit.Clock: it moves the clock instead of waiting.
func (c *exampleClock) Sleep(ctx context.Context, d time.Duration) error {
	c.Advance(d)
	return ctx.Err()
}

// Advance moves the clock d ahead.
func (c *exampleClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Peek tells what Allow would decide, and charges nothing: ask as often as you like.
func ExampleLimiter_Peek() {
	ctx := context.Background()
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newExampleClock()))
	limiter, err := ratelimit.New(store, ratelimit.Policy{Limit: 3, Window: time.Minute})
	if err != nil {
		panic(err)
	}

	limiter.Allow(ctx, "client-42")
	limiter.Allow(ctx, "client-42")
	for range 2 {
		d, _ := limiter.Peek(ctx, "client-42")
		fmt.Println("peek: ", d.Allowed, d.Remaining)
	}
	d, _ := limiter.Allow(ctx, "client-42")
	fmt.Println("allow:", d.Allowed, d.Remaining)
	d, _ = limiter.Peek(ctx, "client-42")
	fmt.Println("peek: ", d.Allowed, d.RetryAfter)
	// Output:
	// peek:  true 0
	// peek:  true 0
	// allow: true 0
	// peek:  false 20s
}

// Settle(ctx, key, d, 0) gives back what a decision charged, for a request that turned out not to count; a
// denied request charged nothing, and its refund does nothing. (The guard's CountIf option
// refunds by response status.)
func ExampleLimiter_Settle() {
	ctx := context.Background()
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newExampleClock()))
	limiter, err := ratelimit.New(store, ratelimit.Policy{Limit: 2, Window: time.Minute})
	if err != nil {
		panic(err)
	}

	limiter.Allow(ctx, "client-42")
	d, _ := limiter.Allow(ctx, "client-42")
	fmt.Println(d.Allowed, d.Remaining)
	if err := limiter.Settle(ctx, "client-42", d, 0); err != nil {
		panic(err)
	}
	d, _ = limiter.Allow(ctx, "client-42") // the refunded unit
	fmt.Println(d.Allowed, d.Remaining)
	d, _ = limiter.Allow(ctx, "client-42")
	fmt.Println(d.Allowed, d.Remaining)
	fmt.Println(limiter.Settle(ctx, "client-42", d, 0)) // denied: nothing to give back
	d, _ = limiter.Allow(ctx, "client-42")
	fmt.Println(d.Allowed, d.Remaining)
	// Output:
	// true 0
	// true 0
	// false 0
	// <nil>
	// false 0
}

// Reset forgets everything the limiter holds for a key, under every policy: the key starts
// afresh.
func ExampleLimiter_Reset() {
	ctx := context.Background()
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newExampleClock()))
	limiter, err := ratelimit.New(store,
		ratelimit.Policy{Limit: 2, Window: time.Second},
		ratelimit.Policy{Limit: 10, Window: time.Hour})
	if err != nil {
		panic(err)
	}

	for range 3 {
		d, _ := limiter.Allow(ctx, "client-42")
		fmt.Println(d.Allowed, d.Remaining, d.Policy.Name)
	}
	if err := limiter.Reset(ctx, "client-42"); err != nil {
		panic(err)
	}
	d, _ := limiter.Allow(ctx, "client-42")
	fmt.Println(d.Allowed, d.Remaining, d.Policy.Name)
	for _, r := range d.Results() {
		fmt.Println("  ", r.Policy.Name, r.Remaining)
	}
	// Output:
	// true 1 gcra-2-per-1s
	// true 0 gcra-2-per-1s
	// false 0 gcra-2-per-1s
	// true 1 gcra-2-per-1s
	//    gcra-2-per-1s 1
	//    gcra-10-per-1h 9
}
