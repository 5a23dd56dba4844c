package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/calendar"
)

// A quota of 3 a day in New York, on the day the clocks go forward: the day that starts at
// midnight on March 8 is 23 hours long, and the quota comes back at the next midnight. (The
// store runs on a clock the example sets; leave WithClock out in an application.)
func ExamplePolicy_calendar() {
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		panic(err)
	}
	clock := &exampleClock{now: time.Date(2026, 3, 8, 22, 0, 0, 0, newYork)}
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)),
		ratelimit.Policy{Name: "daily", Limit: 3, Period: &calendar.Period{Unit: calendar.Day, Zone: newYork}})
	if err != nil {
		panic(err)
	}
	for range 4 {
		d, _ := limiter.Allow(context.Background(), "customer-7")
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter)
	}
	start, end := calendar.Period{Unit: calendar.Day, Zone: newYork}.Bounds(clock.Now())
	fmt.Println("the day:", start.Format(time.DateTime), "to", end.Format(time.DateTime), "is", end.Sub(start))
	clock.now = end
	d, _ := limiter.Allow(context.Background(), "customer-7")
	fmt.Println("at midnight:", d.Allowed, d.Remaining)
	// Output:
	// true 2 0s
	// true 1 0s
	// true 0 0s
	// false 0 2h0m0s
	// the day: 2026-03-08 00:00:00 to 2026-03-09 00:00:00 is 23h0m0s
	// at midnight: true 2
}
