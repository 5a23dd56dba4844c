package ratelimit

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// dialWatch is a go-redis hook that remembers the client's failed dials: a call that runs out
// of time while the client cannot connect (go-redis dials again and again within the
// deadline) failed because Redis is unreachable, not because it was slow, and is reported so
// (of kind unavailable). It only watches: every dial and command goes on as before.
type dialWatch struct {
	dials    atomic.Uint64               // dials begun so far
	failures atomic.Uint64               // failed dials so far
	failed   atomic.Pointer[dialFailure] // the last failure since the last dial that succeeded; nil: none
	// onFail is told of each failed dial at once (the store's breaker), with what epoch
	// returned when the dial began; nil: nobody. A dial can fail after Redis is back (it began
	// before, or its goroutine ran late): the epoch lets the breaker tell such stale evidence.
	onFail atomic.Pointer[func(err error, epoch uint64)]
	epoch  atomic.Pointer[func() uint64]
	// held holds the pool's failed background dials until a call needs them (see
	// redisredial.go), unless the hook of another store on the client, outside this one,
	// holds them: holder is then that store's, which this store's calls wake. nil: held.
	held   redials
	holder atomic.Pointer[redials]
}

// holderKey is the context key under which a dial hook that holds a background dial marks
// it for the hooks inside it.
type holderKey struct{}

// holding returns the redials that hold the background dials of w's client.
func (w *dialWatch) holding() *redials {
	if h := w.holder.Load(); h != nil {
		return h
	}
	return &w.held
}

// stop ends w's holding: the store is closed, and no call of its will wake a held dial.
func (w *dialWatch) stop() { w.held.stop() }

// dialFailure is a failed dial.
type dialFailure struct {
	addr string
	err  error
}

var _ redis.Hook = (*dialWatch)(nil)

// watchDials adds a dialWatch to client when it takes hooks, and returns it; nil otherwise.
func watchDials(client redis.Scripter) *dialWatch {
	h, ok := client.(interface{ AddHook(redis.Hook) })
	if !ok {
		return nil
	}
	w := new(dialWatch)
	h.AddHook(w)
	return w
}

// DialHook implements redis.Hook.
func (w *dialWatch) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var epoch uint64
		if e := w.epoch.Load(); e != nil {
			epoch = (*e)()
		}
		w.dials.Add(1)
		// The outermost hook of an open store holds the pool's background dial; the
		// stores inside it wake that one (see holderKey).
		hold := backgroundDial()
		if hold {
			if outer, ok := ctx.Value(holderKey{}).(*redials); ok {
				w.holder.Store(outer)
				hold = false
			} else if hold = w.held.begin(); hold {
				w.holder.Store(nil)
				ctx = context.WithValue(ctx, holderKey{}, &w.held)
			}
		}
		conn, err := next(ctx, network, addr)
		switch {
		case err == nil:
			if w.failed.Load() != nil {
				w.failed.Store(nil)
			}
		case ctx.Err() == nil: // a dial abandoned with its call is no evidence
			w.failed.Store(&dialFailure{addr: addr, err: err})
			w.failures.Add(1)
			if f := w.onFail.Load(); f != nil {
				(*f)(err, epoch)
			}
		}
		if hold {
			conn, err = w.held.end(ctx, conn, err, func(ctx context.Context) (net.Conn, error) { return next(ctx, network, addr) })
			if err == nil && w.failed.Load() != nil {
				w.failed.Store(nil)
			}
		}
		return conn, err
	}
}

// ProcessHook implements redis.Hook.
func (w *dialWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook implements redis.Hook.
func (w *dialWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// mark returns what explain and redial compare with: the failed dials so far, and the dials
// begun.
func (w *dialWatch) mark() dialMark {
	if w == nil {
		return dialMark{}
	}
	return dialMark{w.failures.Load(), w.dials.Load()}
}

// dialMark is what mark returns.
type dialMark struct{ failures, dials uint64 }

// redial reports whether a call that began at mark and failed with err may be sent again
// because its client's pool answered a cached dial error and has dialled again since, with
// success: the call reached no server (see redisredial.go).
func (w *dialWatch) redial(ctx context.Context, err error, mark dialMark) bool {
	return w != nil && w.dials.Load() == mark.dials && cachedDialError(err) && w.holding().redial(ctx)
}

// explain returns err of a call that began at mark, as unavailable when it is a timeout and a
// dial failed during the call, with no dial succeeding since.
func (w *dialWatch) explain(err error, mark dialMark) error {
	if w == nil || w.failures.Load() == mark.failures || kindOf(err) != kindTimeout {
		return err
	}
	f := w.failed.Load()
	if f == nil {
		return err
	}
	return &kinded{kindUnavailable, fmt.Errorf("%w; connecting to Redis at %s failed: %w", err, f.addr, f.err)}
}
