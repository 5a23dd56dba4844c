package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// timeouts gives the store calls of one guard their deadline, its timeout after the call
// begins. A call whose context can neither end nor be canceled (its Done is nil: a request
// without a deadline or cancellation of its own, as a Fiber request's, or the context of
// Guard.Done) gets a context of a single allocation: its deadline is shared with the calls
// that began within the same grain of time, one timer and one channel for all of them, where
// context.WithTimeout makes a timer, a channel and three more objects for each call. The
// shared deadline is the call's rounded up to the next grain, a 32nd of the timeout and at most
// a millisecond: never earlier than the timeout asks. Any other context gets
// context.WithTimeout, which also ends the call when the request's context ends; unless the
// request's own deadline comes first (see ownDeadline).
type timeouts struct {
	timeout time.Duration
	grain   int64                // nanoseconds
	cur     atomic.Pointer[tick] // the latest shared deadline; nil: none yet
	mu      sync.Mutex           // makes the next tick
}

// tick is one shared deadline: ctx, a context of its own, ends at at.
type tick struct {
	at     time.Time
	ctx    context.Context
	cancel context.CancelFunc // never called: ctx ends at its deadline
}

// maxGrain bounds how much later than its timeout a call with a shared deadline may end.
const maxGrain = time.Millisecond

func newTimeouts(timeout time.Duration) *timeouts {
	return &timeouts{timeout: timeout, grain: max(1, int64(min(timeout/32, maxGrain)))}
}

// noCancel is the cancel function of a context that needs none.
func noCancel() {}

// bound returns ctx bounded by the timeout, and the function that releases what it holds.
func (t *timeouts) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Done() != nil {
		if d, ok := ctx.Deadline(); ok && time.Until(d) < t.timeout {
			return ownDeadline(ctx, t.timeout)
		}
		return context.WithTimeout(ctx, t.timeout)
	}
	if _, ok := ctx.Deadline(); ok { // a deadline without Done: not a context of the standard library
		return context.WithTimeout(ctx, t.timeout)
	}
	return &sharedDeadline{ctx, t.tick().ctx}, noCancel
}

// tick returns the shared deadline of a call that begins now.
func (t *timeouts) tick() *tick {
	want := time.Now().Add(t.timeout)
	k := t.cur.Load()
	if k == nil || k.at.Before(want) || k.at.Sub(want) >= time.Duration(t.grain) {
		k = t.next(want)
	}
	return k
}

// ownDeadline bounds a call whose request has a deadline of its own before the guard's timeout
// (a gRPC client's grpc-timeout, an upstream's): by the timeout alone, and canceled when the
// request's context ends, whatever ended it. The store's layers then see a client that went
// away (context.Canceled), as the guard does, and not a store that timed out: a client's
// deadline of a few ms is no evidence against the store, and was counted by the breaker (five
// in a row opened it for every client) and told to the observer as a timeout.
func ownDeadline(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	if ctx.Err() != nil { // ended already: done at once (AfterFunc would cancel a goroutine later)
		cancel()
		return c, cancel
	}
	stop := context.AfterFunc(ctx, cancel)
	return c, func() {
		stop()
		cancel()
	}
}

// next returns the tick of a call that must end at want, making it if need be.
func (t *timeouts) next(want time.Time) *tick {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k := t.cur.Load(); k != nil && !k.at.Before(want) && k.at.Sub(want) < time.Duration(t.grain) {
		return k // made meanwhile
	}
	at := want
	if r := want.UnixNano() % t.grain; r != 0 { // Add keeps want's monotonic reading
		at = want.Add(time.Duration(t.grain - r))
	}
	k := &tick{at: at}
	k.ctx, k.cancel = context.WithDeadline(context.Background(), at)
	t.cur.Store(k)
	return k
}

// sharedDeadline is a context whose values are its parent's (which can never end) and whose
// deadline is a tick's.
type sharedDeadline struct {
	context.Context                 // the parent: its values
	end             context.Context // the tick's: deadline, Done, Err
}

func (c *sharedDeadline) Deadline() (time.Time, bool) { return c.end.Deadline() }
func (c *sharedDeadline) Done() <-chan struct{}       { return c.end.Done() }
func (c *sharedDeadline) Err() error                  { return c.end.Err() }

// AfterFunc lets a context made from c (context.WithCancel(c), ...) end with it without a
// goroutine of its own: the context package looks for this method.
func (c *sharedDeadline) AfterFunc(f func()) func() bool { return context.AfterFunc(c.end, f) }

func (c *sharedDeadline) String() string { return "ratelimit.sharedDeadline" }
