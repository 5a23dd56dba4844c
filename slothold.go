package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// slotHold keeps the in-flight slots of a request the guard let through: it renews them every
// third of the shortest slot lifetime (an in-flight policy's Window) while the handler runs,
// so a long request keeps its slots and a request whose instance died loses them within a
// lifetime.
//
// The renewals run on the system's timers (a [Clock] has none), each in a goroutine of its own
// only while it runs; what they write is on the store's clock.
type slotHold struct {
	g       *Guard
	l       *Limiter
	req     Request
	key     string
	every   time.Duration
	mu      sync.Mutex // held by a renewal under way, which stop waits for
	d       Decision   // its slots' time is renewed
	timer   *time.Timer
	stopped bool
	since   time.Time // when the slots were taken, for the observer; zero: none
}

// hold starts renewing the slots that d holds for key.
func (g *Guard) hold(r Request, lim *Limiter, key string, d *Decision) *slotHold {
	l := &slotHold{g: g, l: lim, req: r, key: key, d: *d, every: lim.shortestSlotLife() / 3}
	if g.observer.wantsSlotHeld() {
		l.since = g.clock.Now()
		g.observer.slotHeld(true, 0)
	}
	l.mu.Lock()
	l.timer = time.AfterFunc(l.every, l.renew)
	l.mu.Unlock()
	return l
}

// renew renews the slots once, and again after every.
func (l *slotHold) renew() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	// The client may be gone while the handler runs on: the slots are still taken.
	ctx, cancel := l.g.deadline(context.WithoutCancel(l.req.Context()))
	err := l.l.renew(ctx, l.key, &l.d)
	cancel()
	if err != nil {
		l.g.onError(l.req, l.g.timedOut(err))
	}
	l.timer.Reset(l.every)
}

// keep has the renewals use r from now on: the request DoneLater kept, once the framework may
// recycle the one the hold was made with.
func (l *slotHold) keep(r Request) {
	l.mu.Lock()
	l.req = r
	l.mu.Unlock()
}

// stop ends the renewals, waiting for one under way, and returns the decision with its slots'
// latest time, to release them.
func (l *slotHold) stop() Decision {
	l.timer.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	if !l.since.IsZero() {
		l.g.observer.slotHeld(false, l.g.clock.Now().Sub(l.since))
	}
	return l.d
}

// shortestSlotLife returns the shortest Window (a slot's lifetime) among the limiter's
// in-flight policies.
func (l *Limiter) shortestSlotLife() time.Duration {
	var d time.Duration
	for i := range l.policies {
		if w := l.policies[i].Window; l.policies[i].holds() && (d == 0 || w < d) {
			d = w
		}
	}
	return d
}

// waitsForSlots reports whether d was refused only for want of in-flight slots, which a wait
// may bring: every enforced policy that denied it holds slots and would admit it in time.
func waitsForSlots(d *Decision) bool {
	for _, r := range d.policyResults() {
		if !r.Allowed && !r.Policy.Shadow && (!r.Policy.holds() || r.RetryAfter == algorithms.Never) {
			return false
		}
	}
	return true
}

// Bounds of the interval at which a request waiting for a slot asks the store again.
const (
	slotPollFirst = 5 * time.Millisecond
	slotPollMax   = 100 * time.Millisecond
)

// waitForSlot asks the store again for a request refused only for want of slots, at growing
// intervals, until it is admitted, refused for another reason, or has waited g.slotWait. It
// leaves the last decision in d. The wait is counted both on the clock and as the sum of the
// intervals slept, whichever ends first, so that it ends on any clock.
func (g *Guard) waitForSlot(r Request, l *Limiter, key string, cost int64, d *Decision) error {
	if g.observer != nil {
		g.observer.queued(true)
		defer g.observer.queued(false)
	}
	start := g.clock.Now()
	step, slept := slotPollFirst, time.Duration(0)
	for slept < g.slotWait && g.clock.Now().Sub(start) < g.slotWait {
		pause := min(step, g.slotWait-slept)
		if err := g.clock.Sleep(r.Context(), pause); err != nil {
			return &opError{opSlot, nil, err}
		}
		slept += pause
		step = min(2*step, slotPollMax)
		ctx, cancel := g.deadline(r.Context())
		next, err := l.check(ctx, key, cost, true)
		cancel()
		if err != nil {
			return err
		}
		*d = next
		if d.Allowed || !waitsForSlots(d) {
			return nil
		}
	}
	return nil
}
