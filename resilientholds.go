package ratelimit

import (
	"context"
	"time"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// reserve declares that the store keeps holds when the wrapped store does: through the
// breaker, and on the local fallback while the store fails, as a check. The denial cache
// neither answers it (the holds that expired give back what a cached denial does not know of)
// nor remembers its denials.
func (s *resilientStore) reserve(ctx context.Context, key string, policies []Policy, h *hold, out []PolicyResult) (time.Time, error) {
	hs, ok := holdsOf(s.next)
	if !ok {
		return time.Time{}, errNoHolds
	}
	var at time.Time
	probe, err := s.acquire()
	if err == nil {
		at, err = hs.reserve(ctx, key, policies, h, out)
		s.release(err, probe)
	}
	if err == nil {
		for i := range out {
			out[i].source = observe.SourceStore
		}
		if s.denials != nil && allAdmitted(policies, out) {
			s.denials.charged(s.stored(key))
		}
		return at, nil
	}
	if !s.report(ctx, err) || s.fallback == nil {
		return at, err
	}
	s.fellBack(err)
	return s.fallback.reserve(context.WithoutCancel(ctx), key, policies, h, out)
}

// settle declares that the store keeps holds when the wrapped store does: through the breaker,
// forgetting the identity's cached denials as a refund does.
func (s *resilientStore) settle(ctx context.Context, key string, policies []Policy, h *hold, actual int64) (held bool, err error) {
	hs, ok := holdsOf(s.next)
	if !ok {
		return false, errNoHolds
	}
	err = s.refund(ctx, key, func() (err error) {
		held, err = hs.settle(ctx, key, policies, h, actual)
		return err
	})
	return held, err
}

// reserve is a reservation decided on the local store, under the scaled policies.
func (f *fallback) reserve(ctx context.Context, key string, policies []Policy, h *hold, out []PolicyResult) (time.Time, error) {
	scaled, err := f.scaled(policies)
	if err != nil {
		return time.Time{}, err
	}
	hs, ok := holdsOf(f.store)
	if !ok {
		return time.Time{}, errNoHolds
	}
	// The estimate was clamped to half the least capacity of the store's policies: under the
	// instance's share it is clamped again, to half of the scaled ones', or a fresh identity
	// would be refused for the whole outage (an estimate above the share's capacity: Never),
	// or one request would hold the share's whole quota.
	if _, most, _ := holdBounds(scaled, clockOf(f.store).Now()); h.cost > most {
		h.cost = most
	}
	at, err := hs.reserve(ctx, key, scaled, h, out)
	for i := range out {
		out[i].source = observe.SourceFallback
	}
	if err == nil {
		h.offs = holdOffsets(scaled, out, h.cost) // where its settle gives back: under scaled
	}
	return at, err
}
