package ratelimit_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// schedClock is a clock for goroutines that wait: time moves only when every worker still at
// work sleeps, and then straight to the earliest wake-up. A test of waits then takes no real
// time and does not depend on how fast the machine is, while the work between the sleeps
// (real Redis calls) takes what it takes.
type schedClock struct {
	mu       sync.Mutex
	cond     *sync.Cond
	now      time.Time
	working  int // workers not done
	sleepers []*sleeper
}

type sleeper struct {
	until time.Time
	wake  chan struct{}
}

func newSchedClock(workers int) *schedClock {
	c := &schedClock{now: t0, working: workers}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *schedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *schedClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	s := &sleeper{until: c.now.Add(d), wake: make(chan struct{})}
	c.sleepers = append(c.sleepers, s)
	c.cond.Broadcast()
	c.mu.Unlock()
	select {
	case <-s.wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// done says a worker has finished.
func (c *schedClock) done() {
	c.mu.Lock()
	c.working--
	c.cond.Broadcast()
	c.mu.Unlock()
}

// run moves time until every worker is done: whenever all of them sleep, to the earliest
// wake-up, waking every sleeper due by then.
func (c *schedClock) run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.working > 0 {
		if len(c.sleepers) < c.working {
			c.cond.Wait()
			continue
		}
		next := slices.MinFunc(c.sleepers, func(a, b *sleeper) int { return a.until.Compare(b.until) }).until
		if next.After(c.now) {
			c.now = next
		}
		c.sleepers = slices.DeleteFunc(c.sleepers, func(s *sleeper) bool {
			if s.until.After(c.now) {
				return false
			}
			close(s.wake)
			return true
		})
	}
}

// Ten goroutines share a quota of 100 per second through Wait: 1,000 calls take ten windows
// (the first hundred at once, then a hundred a second), and no window of one second, wherever
// it starts, holds more than 100 — on every engine, the Redis ones across real round trips.
func TestWaitSharesAQuota(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			const workers, calls = 10, 1000
			clock := newSchedClock(workers)
			l := mustNew(t, e.store(t, ratelimit.WithClock(clock)),
				ratelimit.Policy{Name: "api", Limit: 100, Window: time.Second, Algorithm: algorithms.SlidingLog{}})
			var (
				mu       sync.Mutex
				admitted []time.Duration
				wg       sync.WaitGroup
			)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer clock.done()
					for range calls / workers {
						d, err := l.Wait(context.Background(), "third-party-api")
						if err != nil || !d.Allowed {
							t.Errorf("Wait: %+v, %v", d, err)
							return
						}
						mu.Lock()
						admitted = append(admitted, clock.Now().Sub(t0))
						mu.Unlock()
					}
				}()
			}
			clock.run()
			wg.Wait()
			if len(admitted) != calls {
				t.Fatalf("%d calls admitted; want %d", len(admitted), calls)
			}
			slices.Sort(admitted)
			for i, j := 0, 0; i < len(admitted); i++ {
				for admitted[i]-admitted[j] >= time.Second {
					j++
				}
				if n := i - j + 1; n > 100 {
					t.Fatalf("%d calls within one second ending at %v; the limit is 100", n, admitted[i])
				}
			}
			if last := admitted[len(admitted)-1]; last < 9*time.Second || last > 11*time.Second {
				t.Errorf("the 1,000th call at %v; want 10 s ± one window", last)
			}
		})
	}
}

// Wait returns at once, charging nothing, when its turn would come after the context's
// deadline, and a cost no policy can admit is an error, not a wait.
func TestWaitReturnsAtOnce(t *testing.T) {
	clock := newFakeClock()
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 1, Window: time.Minute})
	allow(t, l, "k", 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	d, err := l.Wait(ctx, "k") // its turn comes in a minute
	if !errors.Is(err, context.DeadlineExceeded) || d.Allowed || d.RetryAfter != time.Minute {
		t.Fatalf("Wait with a turn after the deadline: %+v, %v; want a denial in a minute and DeadlineExceeded at once", d, err)
	}
	if ctx.Err() != nil {
		t.Fatal("Wait waited for the deadline")
	}
	_, err = l.WaitN(context.Background(), "other", 2)
	if !errors.Is(err, ratelimit.ErrBadRequest) {
		t.Fatalf("WaitN of a cost above the limit: %v; want ErrBadRequest", err)
	}
	clock.Advance(time.Minute)
	if d, err := l.Wait(ctx, "k"); err != nil || !d.Allowed {
		t.Fatalf("Wait once the turn came: %+v, %v; the earlier waits must have charged nothing", d, err)
	}
}

// cancelOnSleep is a fake clock whose Sleep ends the context it was given the cancel of: a
// caller that gives up while it waits.
type cancelOnSleep struct {
	*fakeClock
	cancel context.CancelFunc
}

func (c cancelOnSleep) Sleep(ctx context.Context, d time.Duration) error {
	c.cancel()
	return ctx.Err()
}

// Under a shaping policy WaitN's admission reserves a slot in the queue. When WaitN returns
// without waiting for it — its turn comes after the context's deadline, or the context ends
// during the wait — it gives the slot back: the caller sends nothing, and the next caller
// gets the turn. The reservation was kept, so each abandoned wait pushed every later turn back
// by a slot (found by a review).
func TestWaitGivesBackAnAbandonedSlot(t *testing.T) {
	shaping := ratelimit.Policy{Limit: 1, Window: time.Minute, Burst: 3, Algorithm: algorithms.LeakyBucket{Shaping: true}}
	t.Run("deadline", func(t *testing.T) {
		l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())), shaping)
		allow(t, l, "k", 1) // goes at once; the next slot is in a minute
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if d, err := l.Wait(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) || d.Delay != time.Minute {
			t.Fatalf("Wait with its slot after the deadline: delay %v, %v; want a minute and DeadlineExceeded", d.Delay, err)
		}
		if d := allow(t, l, "k", 1); !d.Allowed || d.Delay != time.Minute {
			t.Errorf("the next request: allowed %v, delay %v; want the abandoned slot, in a minute", d.Allowed, d.Delay)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(cancelOnSleep{newFakeClock(), cancel})), shaping)
		allow(t, l, "k", 1)
		if _, err := l.Wait(ctx, "k"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait whose context ends during its slot's wait: %v; want Canceled", err)
		}
		if d := allow(t, l, "k", 1); !d.Allowed || d.Delay != time.Minute {
			t.Errorf("the next request: allowed %v, delay %v; want the abandoned slot, in a minute", d.Allowed, d.Delay)
		}
	})
}
