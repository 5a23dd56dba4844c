package ratelimit

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// resilientStore puts in front of a store what keeps a service deciding when the store is slow,
// down or flooded: the denial cache, the circuit breaker, the local fallback, and the observer
// of its failures. Each is optional (see options_resilience.go). It declares Unwrap, so the
// guard still finds the wrapped store's capabilities, and Observer.
type resilientStore struct {
	next     Store
	clock    Clock
	denials  *denialCache // nil: none
	breaker  *breaker     // nil: none
	fallback *fallback    // nil: none
	observer *Observer    // nil: none
	// cause is the store failure on which the fallback decided last, as the guards over the
	// store report it (see fellBackOn); nil before any.
	cause atomic.Pointer[opError]
	// stored names an identity as the denial cache does: as the store's keys hold it, which is
	// how announcements name it (see storedIdentity).
	stored func(identity string) string
}

var _ Store = (*resilientStore)(nil)

// resilient wraps s as the options of c ask, or returns s when they ask for nothing.
func resilient(s Store, c *storeConfig) Store {
	r := c.res
	if r.breakerFailures == 0 && r.denials == 0 && r.share == 0 && r.observer == nil {
		return s
	}
	rs := &resilientStore{next: s, clock: clockOf(s), observer: r.observer, stored: c.stored}
	if r.denials > 0 {
		rs.denials = newDenialCache(r.denials)
	}
	if r.breakerFailures > 0 {
		rs.breaker = &breaker{failures: r.breakerFailures, cooldown: r.breakerCooldown, clock: rs.clock, log: logs{c.logger}}
		if r.observer != nil {
			rs.breaker.changed = r.observer.BreakerChanged // nil: not told
		}
	}
	if r.share > 0 {
		rs.fallback = newFallback(c)
	}
	return rs
}

// close ends what the layers report, for a store being closed: its breaker is told closed.
func (s *resilientStore) close() {
	if s.breaker != nil {
		s.breaker.stop()
	}
}

// Unwrap declares the wrapped store (see [Store]).
func (s *resilientStore) Unwrap() Store { return s.next }

// Observer declares the store's observer (see [Observer]).
func (s *resilientStore) Observer() *Observer { return s.observer }

// Check implements [Store]: the denial cache answers what it can; the store is called unless
// its breaker is open; a failure is reported and, with a fallback, decided locally.
func (s *resilientStore) Check(ctx context.Context, key string, policies []Policy, cost int64, charge bool, out []PolicyResult) (time.Time, error) {
	return s.check(ctx, key, policies, cost, charge, false, out)
}

// check is Check, or with lease, chargeLease (see leasecount.go).
func (s *resilientStore) check(ctx context.Context, key string, policies []Policy, cost int64, charge, lease bool, out []PolicyResult) (time.Time, error) {
	refresh := false
	q := asked{who: key, policies: policies, cost: cost, charge: charge}
	if s.denials != nil && cost > 0 {
		q.id, q.at = s.stored(key), s.clock.Now()
		var hit bool
		if hit, refresh = s.denials.answer(&q, out); hit {
			return q.at, nil
		}
	}
	var at time.Time
	probe, err := s.acquire()
	if err == nil {
		if lease {
			at, err = s.chargeBelow(ctx, key, policies, cost, out)
		} else {
			at, err = s.next.Check(ctx, key, policies, cost, charge, out)
		}
		s.release(err, probe)
	}
	if err == nil {
		// The store decided: out may hold another decider's label from an earlier call with
		// the same results (the lease layer asks again for the request alone).
		for i := range out {
			out[i].source = observe.SourceStore
		}
	}
	switch {
	case refresh:
		s.denials.settle(&q, out, err)
	case err != nil || s.denials == nil || cost == 0:
	case charge && allAdmitted(policies, out):
		s.denials.charged(q.id)
		if cost == 1 { // one that left nothing foretells a denial: see spent
			s.denials.remember(&q, out)
		}
	default:
		s.denials.remember(&q, out)
	}
	if err != nil {
		if !s.report(ctx, err) || s.fallback == nil {
			return at, err
		}
		s.fellBack(err)
		// The request's deadline may have passed waiting for the store: the local decision
		// needs no time.
		return s.fallback.check(context.WithoutCancel(ctx), key, policies, cost, charge, out)
	}
	return at, nil
}

// Refund implements [Store]: through the breaker, and forgetting the identity's cached
// denials (under every policy list: a refund of some policies may end a denial of any list
// that holds one of them). It forgets them again once the store has refunded, for a denial
// remembered from a check that raced with the refund.
func (s *resilientStore) Refund(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) error {
	return s.refund(ctx, key, func() error { return s.next.Refund(ctx, key, policies, cost, at) })
}

// refund makes the refund f of key's charge as Refund does.
func (s *resilientStore) refund(ctx context.Context, key string, f func() error) error {
	if s.denials != nil {
		id := s.stored(key)
		s.denials.forget(id)
		defer s.denials.forget(id)
	}
	return s.call(ctx, f)
}

// Renew declares that the store holds in-flight slots when the wrapped store does: through
// the breaker.
func (s *resilientStore) Renew(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) (t time.Time, err error) {
	r, ok := capability[renewer](s.next)
	if !ok {
		return time.Time{}, errNoSlots
	}
	err = s.call(ctx, func() (err error) {
		t, err = r.Renew(ctx, key, policies, cost, at)
		return err
	})
	return t, err
}

// local returns the store and policies that decided in place of the wrapped store: the
// fallback's, or nil.
func (s *resilientStore) local(policies []Policy) (Store, []Policy) {
	if s.fallback == nil {
		return nil, nil
	}
	scaled, err := s.fallback.scaled(policies)
	if err != nil {
		return nil, nil
	}
	return s.fallback.store, scaled
}

// fellBack records err, the store's failure, as the cause of the fallback's decisions: with
// its kind, so that a guard's log says what failed (a timeout, an OOM, a refused connection)
// and not only that the fallback decided. A failure already recorded (an open breaker's) is
// not made again.
func (s *resilientStore) fellBack(err error) {
	if c := s.cause.Load(); c != nil && c.err == err {
		return
	}
	kind := error(kindUnavailable)
	if e, ok := storeError(opCheck, err).(*opError); ok && e.kind != nil {
		kind = e.kind
	}
	s.cause.Store(&opError{opFallback, kind, err})
}

// fallbackCause declares why the fallback decided (see fallbackCauser): the store's last
// failure, or nil before any.
func (s *resilientStore) fallbackCause() error {
	if c := s.cause.Load(); c != nil {
		return c
	}
	return nil
}

// Reset implements [Store]: through the breaker, and forgetting a cached denial and the
// fallback's state too.
func (s *resilientStore) Reset(ctx context.Context, key string, policies []Policy) error {
	if s.denials != nil {
		id := s.stored(key)
		s.denials.forget(id)
		defer s.denials.forget(id)
	}
	if s.fallback != nil {
		if scaled, err := s.fallback.scaled(policies); err == nil {
			s.fallback.store.Reset(ctx, key, scaled)
		}
	}
	return s.call(ctx, func() error { return s.next.Reset(ctx, key, policies) })
}

// call makes a store call that only writes, through the breaker, and reports its failure.
func (s *resilientStore) call(ctx context.Context, f func() error) error {
	probe, err := s.acquire()
	if err == nil {
		err = f()
		s.release(err, probe)
	}
	if err != nil {
		s.report(ctx, err)
	}
	return err
}

// acquire asks the breaker for a call: errBreakerOpen when it is open.
func (s *resilientStore) acquire() (probe bool, err error) {
	if s.breaker == nil {
		return false, nil
	}
	ok, probe := s.breaker.acquire()
	if !ok {
		return false, errOpen
	}
	return probe, nil
}

// errOpen is the error of a call the breaker did not make.
var errOpen = &opError{"", kindBreakerOpen, errBreakerOpen}

func (s *resilientStore) release(err error, probe bool) {
	if s.breaker != nil {
		s.breaker.release(err, probe)
	}
}

// report tells the observer of a store failure, and reports whether it was one: a call
// abandoned because its client went away is not.
func (s *resilientStore) report(ctx context.Context, err error) bool {
	if errors.Is(ctx.Err(), context.Canceled) {
		return false
	}
	if s.observer != nil {
		s.observer.storeFailed(storeError(opCheck, err))
	}
	return true
}
