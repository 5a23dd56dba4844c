package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// A reset of an identity must not let the quota leases of the fleet admit more than the limit
// after it: an instance serves a lease without a call, so a reset made elsewhere reaches it a
// message later, or never (a subscription that was down). Redis therefore counts, beside each
// leasing fixed window's state, the units that the leases of its window hold (see lease_taken
// in fixed_window.lua), and a reset keeps them counted (reset.lua): the new count starts at
// what the leases hold, and each lease's end refunds what it did not hand out, as it always
// did. Whatever a lease hands out after the reset is then in the new count, and no refund of
// a lease gives back units the reset forgot. The units a lease handed out before the reset
// stay counted too (fewer admitted, never more): at most one lease's time of the identity's
// traffic. An instance that hears the reset ends its leases of the identity at once, and one
// that resets ends its own before Redis forgets.

// leaseCounter is a store that counts the units its leases hold (the Redis store, and the
// resilient layer over it). A store without it (the tests' memory stores) is asked plain
// checks and refunds.
type leaseCounter interface {
	// chargeLease is Check of a lease of k units, charged and counted as the lease's.
	chargeLease(ctx context.Context, key string, policies []Policy, k int64, out []PolicyResult) (time.Time, error)
	// endLease refunds the unused units of a lease of k charged at at, and ends it.
	endLease(ctx context.Context, key string, policies []Policy, unused, k int64, at time.Time) error
}

var (
	_ leaseCounter = (*redisStore)(nil)
	_ leaseCounter = (*resilientStore)(nil)
)

func (s *redisStore) chargeLease(ctx context.Context, key string, policies []Policy, k int64, out []PolicyResult) (time.Time, error) {
	return s.check(ctx, key, policies, k, 4, out)
}

func (s *redisStore) endLease(ctx context.Context, key string, policies []Policy, unused, k int64, at time.Time) error {
	args, err := s.scriptArgs(key, policies, unused, 5, at.UnixMicro())
	if err == nil {
		args = s.leaseKeys(args, policies)
		var channel any = ""
		if s.compact {
			channel = s.forgets
		}
		_, err = s.runInts(ctx, adjustScript, append(args, channel, k))
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("ratelimit: redis refund: %w", err)
	}
	return nil
}

// chargeLease is Check, for a lease (see leaseCounter).
func (s *resilientStore) chargeLease(ctx context.Context, key string, policies []Policy, k int64, out []PolicyResult) (time.Time, error) {
	return s.check(ctx, key, policies, k, true, true, out)
}

// chargeBelow charges a lease in the store below: counted where it can be.
func (s *resilientStore) chargeBelow(ctx context.Context, key string, policies []Policy, k int64, out []PolicyResult) (time.Time, error) {
	if c, ok := capability[leaseCounter](s.next); ok {
		return c.chargeLease(ctx, key, policies, k, out)
	}
	return s.next.Check(ctx, key, policies, k, true, out)
}

// endLease is Refund, ending a lease (see leaseCounter).
func (s *resilientStore) endLease(ctx context.Context, key string, policies []Policy, unused, k int64, at time.Time) error {
	c, ok := capability[leaseCounter](s.next)
	if !ok {
		return s.Refund(ctx, key, policies, unused, at)
	}
	return s.refund(ctx, key, func() error { return c.endLease(ctx, key, policies, unused, k, at) })
}
