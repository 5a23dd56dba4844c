package algorithms_test

import (
	"context"
	"fmt"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// clock is a clock that moves only when told to. A store given it with ratelimit.WithClock
// runs its limits on it, so each example's decisions are exact.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	c.now = c.now.Add(d)
	return ctx.Err()
}

// start is a whole second, where a window of a second starts.
var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// A fixed window counts per aligned window, so a client that sends its requests just before
// and just after a boundary gets twice the limit through within 130 ms.
func ExampleFixedWindow() {
	c := &clock{now: start}
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(c)),
		ratelimit.Policy{Limit: 3, Window: time.Second, Algorithm: algorithms.FixedWindow{}})
	if err != nil {
		panic(err)
	}

	for _, ms := range []int{900, 950, 990, 1000, 1010, 1020, 1030} {
		c.now = start.Add(time.Duration(ms) * time.Millisecond)
		d, _ := limiter.Allow(context.Background(), "client")
		fmt.Printf("%4dms allowed=%t remaining=%d retry-after=%v\n", ms, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	//  900ms allowed=true remaining=2 retry-after=0s
	//  950ms allowed=true remaining=1 retry-after=0s
	//  990ms allowed=true remaining=0 retry-after=0s
	// 1000ms allowed=true remaining=2 retry-after=0s
	// 1010ms allowed=true remaining=1 retry-after=0s
	// 1020ms allowed=true remaining=0 retry-after=0s
	// 1030ms allowed=false remaining=0 retry-after=970ms
}

// The sliding log keeps the time of every admitted request: the same traffic as the fixed
// window's gets the limit through and no more, and each refusal says when the oldest request
// leaves the window.
func ExampleSlidingLog() {
	c := &clock{now: start}
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(c)),
		ratelimit.Policy{Limit: 3, Window: time.Second, Algorithm: algorithms.SlidingLog{}})
	if err != nil {
		panic(err)
	}

	for _, ms := range []int{900, 950, 990, 1000, 1010, 1900} {
		c.now = start.Add(time.Duration(ms) * time.Millisecond)
		d, _ := limiter.Allow(context.Background(), "client")
		fmt.Printf("%4dms allowed=%t remaining=%d retry-after=%v\n", ms, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	//  900ms allowed=true remaining=2 retry-after=0s
	//  950ms allowed=true remaining=1 retry-after=0s
	//  990ms allowed=true remaining=0 retry-after=0s
	// 1000ms allowed=false remaining=0 retry-after=900ms
	// 1010ms allowed=false remaining=0 retry-after=890ms
	// 1900ms allowed=true remaining=0 retry-after=0s
}

// The sliding counter weighs the previous window's count by how much of it still overlaps
// the last Window: halfway through a window, 4 requests in the previous one count as 2.
func ExampleSlidingCounter() {
	c := &clock{now: start}
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(c)),
		ratelimit.Policy{Limit: 4, Window: time.Second, Algorithm: algorithms.SlidingCounter{}})
	if err != nil {
		panic(err)
	}

	for _, ms := range []int{500, 500, 500, 500, 1500, 1500, 1500} {
		c.now = start.Add(time.Duration(ms) * time.Millisecond)
		d, _ := limiter.Allow(context.Background(), "client")
		fmt.Printf("%4dms allowed=%t remaining=%d retry-after=%v\n", ms, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	//  500ms allowed=true remaining=3 retry-after=0s
	//  500ms allowed=true remaining=2 retry-after=0s
	//  500ms allowed=true remaining=1 retry-after=0s
	//  500ms allowed=true remaining=0 retry-after=0s
	// 1500ms allowed=true remaining=1 retry-after=0s
	// 1500ms allowed=true remaining=0 retry-after=0s
	// 1500ms allowed=false remaining=0 retry-after=250ms
}

// A token bucket of 3 tokens refilled at 1 per second: a burst of 3 at once, then one a
// second; a quiet client saves up tokens again, up to 3.
func ExampleTokenBucket() {
	c := &clock{now: start}
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(c)),
		ratelimit.Policy{Limit: 1, Window: time.Second, Burst: 3, Algorithm: algorithms.TokenBucket{}})
	if err != nil {
		panic(err)
	}

	for _, ms := range []int{0, 0, 0, 0, 1000, 1500, 4000} {
		c.now = start.Add(time.Duration(ms) * time.Millisecond)
		d, _ := limiter.Allow(context.Background(), "client")
		fmt.Printf("%4dms allowed=%t remaining=%d retry-after=%v\n", ms, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	//    0ms allowed=true remaining=2 retry-after=0s
	//    0ms allowed=true remaining=1 retry-after=0s
	//    0ms allowed=true remaining=0 retry-after=0s
	//    0ms allowed=false remaining=0 retry-after=1s
	// 1000ms allowed=true remaining=0 retry-after=0s
	// 1500ms allowed=false remaining=0 retry-after=500ms
	// 4000ms allowed=true remaining=2 retry-after=0s
}

// A policing leaky bucket holds 2 and drains one every 500 ms: a request that would
// overflow it is refused until enough has drained.
func ExampleLeakyBucket() {
	c := &clock{now: start}
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(c)),
		ratelimit.Policy{Limit: 2, Window: time.Second, Algorithm: algorithms.LeakyBucket{}})
	if err != nil {
		panic(err)
	}

	for _, ms := range []int{0, 0, 0, 500, 600, 1000} {
		c.now = start.Add(time.Duration(ms) * time.Millisecond)
		d, _ := limiter.Allow(context.Background(), "client")
		fmt.Printf("%4dms allowed=%t remaining=%d retry-after=%v\n", ms, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	//    0ms allowed=true remaining=1 retry-after=0s
	//    0ms allowed=true remaining=0 retry-after=0s
	//    0ms allowed=false remaining=0 retry-after=500ms
	//  500ms allowed=true remaining=0 retry-after=0s
	//  600ms allowed=false remaining=0 retry-after=400ms
	// 1000ms allowed=true remaining=0 retry-after=0s
}

// A shaping leaky bucket admits a burst into a queue and gives each request its slot, one
// every 200 ms: the caller waits for Delay (the Guard does it on the store's clock), so the
// requests leave at a constant rate. A request that would wait more than Burst slots is
// refused.
func ExampleLeakyBucket_shaping() {
	c := &clock{now: start}
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(c)),
		ratelimit.Policy{Limit: 5, Window: time.Second, Burst: 3, Algorithm: algorithms.LeakyBucket{Shaping: true}})
	if err != nil {
		panic(err)
	}

	for _, ms := range []int{0, 0, 0, 0, 1000} {
		c.now = start.Add(time.Duration(ms) * time.Millisecond)
		d, _ := limiter.Allow(context.Background(), "client")
		fmt.Printf("%4dms allowed=%t delay=%v retry-after=%v\n", ms, d.Allowed, d.Delay, d.RetryAfter)
	}
	// Output:
	//    0ms allowed=true delay=0s retry-after=0s
	//    0ms allowed=true delay=200ms retry-after=0s
	//    0ms allowed=true delay=400ms retry-after=0s
	//    0ms allowed=false delay=0s retry-after=200ms
	// 1000ms allowed=true delay=0s retry-after=0s
}

// GCRA admits Burst at once, then one every Window/Limit, exactly: with 4 per second and a
// burst of 2, the next request fits every 250 ms, and a refusal says to the microsecond when.
func ExampleGCRA() {
	c := &clock{now: start}
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(c)),
		ratelimit.Policy{Limit: 4, Window: time.Second, Burst: 2, Algorithm: algorithms.GCRA{}})
	if err != nil {
		panic(err)
	}

	for _, ms := range []int{0, 0, 0, 250, 300, 500, 750} {
		c.now = start.Add(time.Duration(ms) * time.Millisecond)
		d, _ := limiter.Allow(context.Background(), "client")
		fmt.Printf("%4dms allowed=%t remaining=%d retry-after=%v\n", ms, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	//    0ms allowed=true remaining=1 retry-after=0s
	//    0ms allowed=true remaining=0 retry-after=0s
	//    0ms allowed=false remaining=0 retry-after=250ms
	//  250ms allowed=true remaining=0 retry-after=0s
	//  300ms allowed=false remaining=0 retry-after=200ms
	//  500ms allowed=true remaining=0 retry-after=0s
	//  750ms allowed=true remaining=0 retry-after=0s
}

// A rules file or a command line names an algorithm; All finds it by its Name.
func ExampleAll() {
	for _, a := range algorithms.All() {
		fmt.Printf("%-24s %#v\n", a.Name(), a)
	}
	// Output:
	// fixed_window             algorithms.FixedWindow{}
	// sliding_window_log       algorithms.SlidingLog{}
	// sliding_window_counter   algorithms.SlidingCounter{}
	// token_bucket             algorithms.TokenBucket{}
	// leaky_bucket             algorithms.LeakyBucket{Shaping:false}
	// leaky_bucket_shaping     algorithms.LeakyBucket{Shaping:true}
	// gcra                     algorithms.GCRA{}
	// in_flight                algorithms.InFlight{}
}
