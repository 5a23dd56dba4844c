package rls

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// StoreHealth follows a store's circuit breaker ([ratelimit.WithBreaker]) through the store's
// observer, for a [Server] to report its health by: give the store [StoreHealth.Observer] and
// the server [WithStoreHealth]. The zero value is not usable; make one with NewStoreHealth.
type StoreHealth struct {
	state atomic.Uint32 // an observe.BreakerState

	mu      sync.Mutex
	changed chan struct{} // closed, and replaced, at each change
}

// NewStoreHealth returns the health of a store whose breaker is closed.
func NewStoreHealth() *StoreHealth { return &StoreHealth{changed: make(chan struct{})} }

// Observer returns the observer to give the store (ratelimit.WithObserver): it follows the
// breaker, and calls next's hooks too when next is not nil (the observer of a metrics module).
// Call it once, before the store is made.
func (h *StoreHealth) Observer(next *ratelimit.Observer) *ratelimit.Observer {
	o := &ratelimit.Observer{}
	if next != nil {
		*o = *next
	}
	then := o.BreakerChanged
	o.BreakerChanged = func(from, to observe.BreakerState) {
		h.set(to)
		if then != nil {
			then(from, to)
		}
	}
	return o
}

func (h *StoreHealth) set(to observe.BreakerState) {
	if observe.BreakerState(h.state.Swap(uint32(to))) == to {
		return
	}
	h.mu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

// Breaker returns the state of the store's breaker, as last reported.
func (h *StoreHealth) Breaker() observe.BreakerState { return observe.BreakerState(h.state.Load()) }

// Available reports whether the store's breaker is closed: open or half-open, calls fail at
// once, but for one probe at a time.
func (h *StoreHealth) Available() bool { return h.Breaker() == observe.BreakerClosed }

// Changed returns a channel closed at the breaker's next change of state.
func (h *StoreHealth) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

// WithStoreHealth has the server follow its store's health through h, which must be the
// health whose Observer the store was given: [Server.Serving] then reports false while the
// store is unavailable and some domain's fail mode is FailError (no fallback deciding).
func WithStoreHealth(h *StoreHealth) Option {
	return named(func(s *Server) error {
		if h == nil {
			return errors.New("rls: WithStoreHealth(nil)")
		}
		s.health = h
		return nil
	}, "WithStoreHealth")
}

// WithLocalFallback tells the server that its store decides locally while Redis is
// unavailable ([ratelimit.WithFallback]): it answers then, and so stays healthy.
func WithLocalFallback() Option {
	return named(func(s *Server) error { s.fallback = true; return nil }, "WithLocalFallback")
}

// Serving reports whether the server can answer every call: false while the store is
// unavailable (its breaker open or half-open, as [WithStoreHealth] follows it), no local
// fallback decides in its place ([WithLocalFallback]), and the fail mode of the default or of
// a domain is FailError, whose calls then fail with Unavailable. While the fail modes answer
// by allow or deny, or the fallback by its share, the server still answers: it is serving.
// Without WithStoreHealth it is always serving.
func (s *Server) Serving() bool {
	if s.health == nil || s.fallback || s.health.Available() {
		return true
	}
	return !s.failModes.anyError()
}

// probePolicy names the counts of the server's own probes of its store.
const probePolicy = "rls-probe"

// ProbeStore asks the store about a key of the server's own, counting nothing, within the
// server's timeout: through an open breaker, the probe that finds the store back closes it.
// It returns the store's error (of kind breaker_open when the breaker let no call through).
func (s *Server) ProbeStore(ctx context.Context) error {
	if !s.local {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	_, err := s.probe.Peek(ctx, "probe")
	return err
}

// WatchHealth calls set with [Server.Serving] now and at each change, until ctx ends. While
// the store is unavailable it probes it every probeEvery ([Server.ProbeStore]), so that a
// server no client calls (a balancer took it out) sees the store come back (every 100 ms when
// probeEvery is not positive).
func (s *Server) WatchHealth(ctx context.Context, probeEvery time.Duration, set func(serving bool)) {
	if probeEvery <= 0 {
		probeEvery = 100 * time.Millisecond
	}
	var changed <-chan struct{}
	if s.health != nil {
		changed = s.health.Changed()
	}
	serving := s.Serving()
	set(serving)
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			changed = s.health.Changed()
		case <-t.C:
			if s.health != nil && !s.health.Available() {
				_ = s.ProbeStore(ctx)
			}
		}
		if now := s.Serving(); now != serving {
			serving = now
			set(serving)
		}
	}
}

func newProbe(store ratelimit.Store) (*ratelimit.Limiter, error) {
	return ratelimit.New(store, ratelimit.Policy{Name: probePolicy, Limit: 1, Window: time.Second, Algorithm: algorithms.FixedWindow{}})
}
