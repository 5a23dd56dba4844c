package ratelimit

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisStore is the store [NewRedisStore] returns: a [Store] that can be closed.
//
// A Redis store keeps a goroutine and a Pub/Sub connection of its client (the denial cache's
// subscription to the fleet's refunds and resets) for as long as it lives, and its quota
// leases hold units charged in Redis. Close ends them: it gives back what the leases did not
// hand out, ends the subscription and its connection, and waits for the store's goroutines.
// It does not close the client, which the store never owns. After Close every call of the
// store fails at once, without a call to Redis, with an error of kind unavailable that says
// the store is closed, reported to its observer as a store failure (a guard then applies its
// fail mode); close the store once the servers
// that use it have stopped. Close is idempotent and safe while calls are under way: a call
// that began before it ends as it would have, its lease given back.
//
// Close returns nil: what it cannot give back (Redis is down) stays charged until its window
// ends, fewer admitted, never more, and is logged. A closed store is gone for its observer
// too: Close reports its breaker closed if it was not, and back every feature it reported
// running without ([Observer.StoreDegraded]).
type RedisStore interface {
	Store
	Close() error
}

// errStoreClosed is the cause of every call of a closed Redis store.
var errStoreClosed = &kinded{kindUnavailable, errors.New("ratelimit: the Redis store is closed (RedisStore.Close)")}

// background runs the goroutines of one store (its subscription, its reads of the eviction
// policy, its refunds of leases) and ends them with the store: stop cancels ctx and waits for
// every one; none starts after it.
type background struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	tasks  sync.WaitGroup // the goroutines of run, which end by themselves (not serve's)
}

func newBackground() *background {
	ctx, cancel := context.WithCancel(context.Background())
	return &background{ctx: ctx, cancel: cancel}
}

// run runs f, a task that ends by itself (a read, a refund), in a goroutine of its own, and
// reports whether it did: not once stop began.
func (b *background) run(f func()) bool { return b.start(f, &b.tasks) }

// serve is run for f that runs until the store is closed (the subscription).
func (b *background) serve(f func()) bool { return b.start(f, nil) }

func (b *background) start(f func(), tasks *sync.WaitGroup) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	if tasks != nil {
		tasks.Add(1)
	}
	go func() {
		defer b.wg.Done()
		if tasks != nil {
			defer tasks.Done()
		}
		f()
	}()
	return true
}

// stop ends the goroutines: it cancels ctx and waits for them.
func (b *background) stop() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}

// subscription holds the store's Pub/Sub, which Close closes under the goroutine that reads
// it (a read blocked on its connection ends only so).
type subscription struct {
	mu     sync.Mutex
	ps     *redis.PubSub
	closed bool
}

// set makes ps the subscription, closing the one it replaces; it closes ps at once when the
// store is closed.
func (s *subscription) set(ps *redis.PubSub) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ps != nil && s.ps != ps {
		_ = s.ps.Close()
	}
	s.ps = ps
	if s.closed && ps != nil {
		_ = ps.Close()
	}
}

// close closes the subscription, and every one set after.
func (s *subscription) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.ps != nil {
		_ = s.ps.Close()
	}
}

// close ends what the store keeps: its subscription and its goroutines. A dial hook stays on
// the client (go-redis takes none off); it no longer reaches the store's breaker, and holds no
// background dial of the pool's (see redisredial.go).
func (s *redisStore) close() {
	s.sub.close()
	s.bg.stop()
	if s.dials != nil {
		s.dials.onFail.Store(nil)
		s.dials.epoch.Store(nil)
		s.dials.stop()
	}
}

// Close implements [RedisStore]: the leasing layer is the store's outermost, so it refuses the
// calls made after Close, ends the leases, and then closes the store below.
func (s *leasingStore) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.endAll()
		if s.closeBelow != nil {
			s.closeBelow()
		}
	})
	return nil
}

// closeRefunds bounds how many leases Close gives back at once.
const closeRefunds = 32

// endAll ends every lease, giving back what each did not hand out, and waits for the refunds
// (each bounded by leaseRefundTimeout). A lease taken by a call under way after it is ended by
// that call (see take), since closed is set before.
func (s *leasingStore) endAll() {
	s.mu.Lock()
	entries := make([]*leaseEntry, 0, len(s.entries))
	for _, e := range s.entries {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	turns := make(chan struct{}, closeRefunds)
	for _, e := range entries {
		e.mu.Lock()
		refund := s.stop(e)
		e.mu.Unlock()
		if refund == nil {
			continue
		}
		wg.Add(1)
		turns <- struct{}{}
		go func() {
			defer wg.Done()
			refund()
			<-turns
		}()
	}
	wg.Wait()
}

// open returns errStoreClosed once the store is closed, and tells the observer of that store
// failure, as the layer below reports its own (a call whose client went away is none): a
// request a guard then lets through unlimited counts a store error of kind unavailable, as the
// guard logs it.
func (s *leasingStore) open(ctx context.Context) error {
	if !s.closed.Load() {
		return nil
	}
	if !errors.Is(ctx.Err(), context.Canceled) {
		s.observer.storeFailed(storeError(opCheck, errStoreClosed))
	}
	return errStoreClosed
}

// Renew declares that the store holds in-flight slots, as the store below does; refused once
// the store is closed.
func (s *leasingStore) Renew(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) (time.Time, error) {
	if err := s.open(ctx); err != nil {
		return time.Time{}, err
	}
	r, ok := capability[renewer](s.next)
	if !ok {
		return time.Time{}, errNoSlots
	}
	return r.Renew(ctx, key, policies, cost, at)
}
