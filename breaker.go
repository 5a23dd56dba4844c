package ratelimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBreakerOpen is the cause of a store call that was not made: the store's circuit breaker
// is open (see [WithBreaker]). Such an error is also of kind [ErrStoreUnavailable].
var ErrBreakerOpen = errors.New("ratelimit: circuit breaker open")

// breaker stops calling a store that keeps failing: after failures consecutive failures it
// opens, and calls fail at once for cooldown; then one call at a time probes the store, and
// the first that succeeds closes the breaker. A closed breaker costs one atomic load per call.
type breaker struct {
	failures int
	cooldown time.Duration
	clock    Clock
	changed  func(from, to BreakerState) // nil: nobody listens

	open  atomic.Bool  // the fast path: closed unless set
	run   atomic.Int64 // consecutive failures
	mu    sync.Mutex
	since time.Time // when the breaker opened, or the last probe failed
	probe bool      // a probe is under way
}

// acquire reports whether a call may be made, and whether it is the probe of an open breaker.
func (b *breaker) acquire() (ok, probe bool) {
	if !b.open.Load() {
		return true, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open.Load() {
		return true, false
	}
	if b.probe || b.clock.Now().Sub(b.since) < b.cooldown {
		return false, false
	}
	b.probe = true
	return true, true
}

// release records the outcome of a call that acquire allowed.
func (b *breaker) release(err error, probe bool) {
	failed := err != nil && !errors.Is(err, context.Canceled) // a client going away is no failure
	if !failed && !probe {
		if b.run.Load() != 0 {
			b.run.Store(0)
		}
		return
	}
	b.mu.Lock()
	var (
		changed  bool
		from, to BreakerState
	)
	switch {
	case probe && failed:
		b.probe, b.since = false, b.clock.Now()
	case probe:
		b.probe = false
		b.run.Store(0)
		b.open.Store(false)
		changed, from, to = true, BreakerOpen, BreakerClosed
	default: // failed
		if b.run.Add(1) >= int64(b.failures) && !b.open.Load() {
			b.since = b.clock.Now()
			b.open.Store(true)
			changed, from, to = true, BreakerClosed, BreakerOpen
		}
	}
	b.mu.Unlock()
	if changed && b.changed != nil {
		b.changed(from, to)
	}
}
