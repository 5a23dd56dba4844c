package ratelimit

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"time"
)

// go-redis's pool (v9 up to at least v9.22, redis/go-redis#3062) stops dialling once PoolSize
// dials have failed in its lifetime (they are never forgotten: only the following mechanism
// resets the count): each later dial is answered at once with the last dial error, and a
// background goroutine of the pool (tryDial) dials once a second until one succeeds. A store
// whose client has seen PoolSize failed dials, over one outage or several, then learns that
// Redis is back up to a second late: its breaker's probes get the cached error, however soon
// they come (measured: "closed" 275–955 ms after Redis answered again, in a second outage).
//
// So the dial watcher holds the pool's background dial when it fails, and dials again when a
// call of the store is answered the cached error (a dial error, no dial made during the call):
// the store's probes pace the pool's recovery, not its one-second sleep. A held dial that no
// call wakes dials again on its own every redialEvery, the pool's own pace, so that the
// client's other users (the application, a store that makes no call) recover as soon as they
// would without the store; after heldFor it lets go (the pool sleeps its second and dials
// again, which is held again), so a client closed during an outage ends its goroutine within
// heldFor and a second. A closed store holds nothing, and lets go of what it held. Of several
// stores on one client, the outermost open one's hook holds the dial, and every store's calls
// wake it (see holderKey).

// heldFor is how long the pool's failed background dial is held at most.
const heldFor = 10 * time.Second

// redialEvery is how long a held dial waits for a call to wake it before it dials again on its
// own: the pool's sleep between its background dials.
const redialEvery = time.Second

// maxRedials bounds the calls a store sends again after a redial succeeded while the pool still
// answered its cached error (the pool forgets its failures a moment after the redial returns).
const maxRedials = 20

// forgetting is how long a call waits before it is sent again when the pool has dialled with
// success and still answers its cached error.
const forgetting = time.Millisecond

// redials is the dial watcher's part that holds the pool's background dials: one round of
// redials at a time, which every call that got the cached error meanwhile waits for.
type redials struct {
	mu       sync.Mutex
	dialling int           // background dials under way, not held
	held     int           // failed background dials waiting for a round
	wake     chan struct{} // closed to start a round
	round    *round        // the round under way; nil: none
	changed  chan struct{} // closed (and made again) at every change of the above
	// ok is set when the last background dial succeeded: the pool forgets its failures, if
	// it has not yet.
	ok bool
	// stopped is set when the store is closed (see stop), and stopping closed then.
	stopped  bool
	stopping chan struct{}
}

// round is one round of redials: every dial held when it began dials again.
type round struct {
	pending int  // its dials not yet ended
	ok      bool // one succeeded
}

// changes returns the channel the next change closes; r.mu is held.
func (r *redials) changes() chan struct{} {
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// change tells the waiters of a change; r.mu is held.
func (r *redials) change() {
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// begin declares a background dial under way, to be held if it fails, and reports whether it
// is: not once the store is closed.
func (r *redials) begin() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return false
	}
	r.dialling++
	return true
}

// stop holds no dial from now on, and lets go of the dials held.
func (r *redials) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stopped {
		r.stopped = true
		close(r.stops())
	}
}

// stops returns the channel stop closes; r.mu is held.
func (r *redials) stops() chan struct{} {
	if r.stopping == nil {
		r.stopping = make(chan struct{})
	}
	return r.stopping
}

// end is a background dial that ended with conn or err. A failure is held: it waits for a
// round, or redialEvery, and dials again with dial, until a dial succeeds, heldFor passes, or
// the store is closed. Each attempt has the time the first had (the pool's DialTimeout).
func (r *redials) end(ctx context.Context, conn net.Conn, err error, dial func(context.Context) (net.Conn, error)) (net.Conn, error) {
	budget := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		budget = max(time.Until(d), 100*time.Millisecond)
	}
	ctx = context.WithoutCancel(ctx)
	until := time.Now().Add(heldFor)
	r.mu.Lock()
	r.dialling--
	defer r.mu.Unlock()
	defer r.change()
	for {
		r.ok = err == nil
		if err == nil || r.stopped {
			return conn, err
		}
		if r.wake == nil {
			r.wake = make(chan struct{})
		}
		wake, stopping := r.wake, r.stops()
		r.held++
		r.change()
		r.mu.Unlock()
		t := time.NewTimer(min(redialEvery, time.Until(until)))
		select {
		case <-wake:
		case <-t.C:
		case <-stopping:
		}
		t.Stop()
		r.mu.Lock()
		var w *round // nil: a dial of its own
		select {
		case <-wake: // woken, or a round began as the time ran out, counting this dial
			w = r.round
		default:
			r.held--
			if r.stopped || !time.Now().Before(until) {
				return nil, err
			}
			r.dialling++ // at the pool's pace, for the client's other users
			r.change()
		}
		r.mu.Unlock()
		c, cancel := context.WithTimeout(ctx, budget)
		conn, err = dial(c)
		cancel()
		r.mu.Lock()
		if w == nil {
			r.dialling--
			continue
		}
		w.pending--
		w.ok = w.ok || err == nil
		if w.pending == 0 {
			r.round = nil
		}
	}
}

// redial wakes the held background dials and waits for them to dial again (or for the one
// under way to end), or for ctx to end; it reports whether one succeeded. A round under way
// is waited for, not doubled. When the pool has dialled with success, it waits a moment (the
// pool forgets its failures once the dial has returned) and reports true; with no dial held
// or under way, false.
func (r *redials) redial(ctx context.Context) bool {
	r.mu.Lock()
	var mine *round
	for {
		switch {
		case mine != nil && r.round != mine: // it ended
			r.mu.Unlock()
			return mine.ok && defaultClock.Sleep(ctx, forgetting) == nil
		case r.round != nil:
			mine = r.round
		case r.held > 0:
			mine = &round{pending: r.held}
			r.round, r.held = mine, 0
			close(r.wake)
			r.wake = make(chan struct{})
		case r.dialling > 0: // its outcome decides
		default:
			ok := r.ok
			r.mu.Unlock()
			return ok && defaultClock.Sleep(ctx, forgetting) == nil
		}
		changed := r.changes()
		r.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
		r.mu.Lock()
	}
}

// backgroundDial reports whether the dial under way is the pool's background dialer's, which
// go-redis makes from ConnPool.tryDial (see above). It reads the caller's frames, a
// microsecond or two per dial (a new connection, not a call).
func backgroundDial() bool {
	var pcs [32]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "/internal/pool.(*ConnPool).tryDial") && strings.Contains(f.Function, "go-redis") {
			return true
		}
		if !more {
			return false
		}
	}
}

// cachedDialError reports whether err, of a call during which the client made no dial, is a
// dial error: the pool's cached one. The call reached no server, so it ran nothing.
func cachedDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
