// Package fakeclock is the clock of this repository's tests: it moves only when told to, so
// no test sleeps to move time.
package fakeclock

import (
	"context"
	"sync"
	"time"
)

// T0 is where tests start the clock: a whole hour, so every window the tests use (seconds,
// minutes, an hour) starts at T0.
var T0 = time.Unix(1_700_000_000-1_700_000_000%3600, 0)

// Clock is a fake clock, safe for concurrent use. It satisfies ratelimit.Clock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock standing at t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Sleep returns at once, without moving the clock (a shaping wait in a test takes no time),
// or ctx.Err() when ctx has ended.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	return ctx.Err()
}
