package ratelimit

import (
	"context"
	"time"
)

// Clock is the one seam for time: the stores read it, and the [Guard] waits on it for a shaping
// policy's slot. Inject one with [WithClock] on a store; the guard takes the clock of its
// limiter's store. The default is the system clock, read so that it never goes back (a wall
// clock stepped by NTP or a migrated VM does not move the limits).
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits for d, or until ctx ends, and then returns ctx.Err().
	Sleep(ctx context.Context, d time.Duration) error
}

// systemClock is the default Clock: the wall clock at its start, advanced by the monotonic
// clock. Its methods have pointer receivers, so that a call through Clock reads start in place
// instead of copying it through a wrapper.
type systemClock struct{ start time.Time }

var defaultClock Clock = &systemClock{start: time.Now()}

// Now reads the monotonic clock once: time.Since of a time that has a monotonic reading does
// not read the wall clock.
func (c *systemClock) Now() time.Time { return c.start.Add(time.Since(c.start)) }

func (*systemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
