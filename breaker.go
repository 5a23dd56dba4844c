package ratelimit

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// errBreakerOpen is the cause of a store call that was not made: the store's circuit breaker
// is open (see [WithBreaker]). Such an error is of kind breaker_open.
var errBreakerOpen = errors.New("ratelimit: circuit breaker open: the store is treated as unavailable until a probe succeeds")

// firstProbe is how long an open breaker waits before its first probe; each probe that fails
// doubles the wait, up to the breaker's cool-down. A store that is back is used again within
// this much, or within the wait reached: the breaker never makes an outage last much longer
// than the store's own.
const firstProbe = 10 * time.Millisecond

// breaker stops calling a store that keeps failing: after failures consecutive failures, or at
// once when the store cannot even be connected to, it opens, and calls fail at once. Then one
// call at a time probes the store (half-open), the first after firstProbe and each further one
// after twice the wait before, up to cooldown; the first probe that succeeds closes the breaker.
// Each change is logged once and told to the observer. A closed breaker costs one atomic load
// per call.
type breaker struct {
	failures int
	cooldown time.Duration
	clock    Clock
	changed  func(from, to observe.BreakerState) // nil: nobody listens
	log      logs

	open     atomic.Bool   // the fast path: closed unless set
	run      atomic.Int64  // consecutive failures
	skipped  atomic.Int64  // calls not made since the breaker opened
	closings atomic.Uint64 // how many times it closed: see trip
	mu       sync.Mutex
	opened   time.Time     // when the breaker opened
	next     time.Time     // when the next probe may go
	wait     time.Duration // the wait before next
	probe    bool          // a probe is under way
	probes   int           // probes that failed since the breaker opened
	probed   bool          // a probe was let through since the breaker opened (logged once)
	logged   time.Time     // when a failed probe was last logged

	// The observer's view: told is the state it was last told of, gone is set once the store
	// is closed (see stop), after which it is told nothing. tellMu orders the tells.
	tellMu sync.Mutex
	told   observe.BreakerState
	gone   bool
}

// acquire reports whether a call may be made, and whether it is the probe of an open breaker.
func (b *breaker) acquire() (ok, probe bool) {
	if !b.open.Load() {
		return true, false
	}
	b.mu.Lock()
	if !b.open.Load() {
		b.mu.Unlock()
		return true, false
	}
	if b.probe || b.clock.Now().Before(b.next) {
		b.mu.Unlock()
		b.skipped.Add(1)
		return false, false
	}
	b.probe = true
	first, openFor := !b.probed, b.clock.Now().Sub(b.opened)
	b.probed = true
	b.mu.Unlock()
	b.tell(observe.BreakerOpen, observe.BreakerHalfOpen)
	if first {
		b.log.get().LogAttrs(context.Background(), slog.LevelInfo,
			"ratelimit: circuit breaker half-open: one check at a time probes the store",
			slog.Duration("open_for", openFor))
	}
	return true, true
}

// release records the outcome of a call that acquire allowed. A call whose client went away
// (context.Canceled) tells nothing of the store, either way: it neither fails nor succeeds, so
// it resets no run of failures, and a probe canceled so closes nothing (the breaker is open
// again, the next probe due at once).
func (b *breaker) release(err error, probe bool) {
	if err != nil && errors.Is(err, context.Canceled) {
		if probe {
			b.mu.Lock()
			b.probe = false
			b.mu.Unlock()
			b.tell(observe.BreakerHalfOpen, observe.BreakerOpen)
		}
		return
	}
	failed := err != nil
	if !failed && !probe {
		if b.run.Load() != 0 {
			b.run.Store(0)
		}
		return
	}
	now := b.clock.Now()
	b.mu.Lock()
	switch {
	case probe && failed:
		b.probe = false
		b.probes++
		b.wait = min(2*b.wait, b.cooldown)
		b.next = now.Add(b.wait)
		quiet := now.Sub(b.logged) < time.Second
		if !quiet {
			b.logged = now
		}
		b.mu.Unlock()
		b.tell(observe.BreakerHalfOpen, observe.BreakerOpen)
		if !quiet {
			b.log.get().LogAttrs(context.Background(), slog.LevelWarn,
				"ratelimit: circuit breaker: the store is still failing; checks go on without it",
				slog.String("kind", errorKind(storeError(opCheck, err))), slog.String("error", err.Error()),
				slog.Int("failed_probes", b.probes), slog.Duration("next_probe_in", b.wait))
		}
	case probe:
		b.probe = false
		b.run.Store(0)
		b.closings.Add(1)
		b.open.Store(false)
		openFor, skipped, probes := now.Sub(b.opened), b.skipped.Swap(0), b.probes
		b.mu.Unlock()
		b.tell(observe.BreakerHalfOpen, observe.BreakerClosed)
		// The checks of the failed probes were decided without the store too, as the calls
		// not made were.
		b.log.get().LogAttrs(context.Background(), slog.LevelInfo,
			"ratelimit: circuit breaker closed: the store answers again",
			slog.Duration("open_for", openFor), slog.Int64("decided_without_store", skipped+int64(probes)),
			slog.Int("failed_probes", probes))
	default: // failed
		if (b.run.Add(1) < int64(b.failures) && !unreachable(err)) || b.open.Load() {
			b.mu.Unlock()
			return
		}
		b.opened, b.wait, b.probes, b.probed, b.logged = now, min(firstProbe, b.cooldown), 0, false, now
		b.next = now.Add(b.wait)
		b.skipped.Store(0)
		b.open.Store(true)
		run := b.run.Load()
		b.mu.Unlock()
		b.tell(observe.BreakerClosed, observe.BreakerOpen)
		b.log.get().LogAttrs(context.Background(), slog.LevelWarn,
			"ratelimit: circuit breaker opened: the store is failing; checks are decided without it (the fail mode, or the local fallback) until a probe succeeds",
			slog.String("kind", errorKind(storeError(opCheck, err))), slog.String("error", err.Error()),
			slog.Int64("consecutive_failures", run))
	}
}

// trip opens the breaker at once, for a store that cannot even be connected to (err): the
// Redis store's dial watcher calls it as soon as a dial fails, so the checks that arrive
// while the calls under way still wait out their deadlines fail at once instead of waiting
// too. epoch is what closings held when the dial began: a dial that began before the breaker
// last closed (a probe found the store back) is stale evidence, and opens nothing.
func (b *breaker) trip(err error, epoch uint64) {
	if b.open.Load() || b.closings.Load() != epoch {
		return
	}
	b.release(err, false)
}

// tell tells the observer of a change, unless the store is closed.
func (b *breaker) tell(from, to observe.BreakerState) {
	if b.changed == nil {
		return
	}
	b.tellMu.Lock()
	defer b.tellMu.Unlock()
	if b.gone {
		return
	}
	b.told = to
	b.changed(from, to)
}

// stop tells the observer, as the store is closed, that its breaker is gone: closed, if it was
// told otherwise (a closed store's breaker is no breaker open); it is told nothing after.
func (b *breaker) stop() {
	if b.changed == nil {
		return
	}
	b.tellMu.Lock()
	defer b.tellMu.Unlock()
	if !b.gone && b.told != observe.BreakerClosed {
		b.changed(b.told, observe.BreakerClosed)
	}
	b.gone = true
}

// unreachable reports a failure to connect to the store at all (refused, no route): evidence
// of an outage, not of a blip, so the breaker opens at once rather than after more requests
// have waited for their deadline.
func unreachable(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
