package ratelimit

import (
	"context"
	"errors"
	"fmt"

	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// Limiter checks requests against a list of policies, all at once: a request is admitted only
// when every policy admits it, and then it is charged to all of them; a denied request costs
// nothing. With a [RedisStore] the check is one atomic round trip, shared by every instance.
//
// A Limiter is safe for concurrent use.
type Limiter struct {
	store    Store
	policies []Policy
}

// New returns a limiter that checks every policy against store, such as [NewMemoryStore]()
// or [NewRedisStore](client). It fails when a policy is invalid, when two policies share a
// name, or when there is no policy or no store.
func New(store Store, policies ...Policy) (*Limiter, error) {
	if store == nil {
		return nil, errors.New("ratelimit: New needs a store, e.g. ratelimit.NewMemoryStore()")
	}
	if len(policies) == 0 {
		return nil, errors.New("ratelimit: New needs at least one policy, e.g. ratelimit.PerMinute(100)")
	}
	l := &Limiter{store: store, policies: make([]Policy, len(policies))}
	names := make(map[string]bool, len(policies))
	for i, p := range policies {
		c, err := p.compile()
		if err != nil {
			return nil, err
		}
		name := c.DisplayName()
		if names[name] {
			return nil, fmt.Errorf("%w %q: two policies have this name; name them apart with Named", ErrInvalidPolicy, name)
		}
		names[name] = true
		l.policies[i] = c
	}
	return l, nil
}

// MustNew is like [New] but panics on an error. It is for package-level limiters whose
// policies are constants.
func MustNew(store Store, policies ...Policy) *Limiter {
	l, err := New(store, policies...)
	if err != nil {
		panic(err)
	}
	return l
}

// WithPolicies returns a limiter over the same store with other policies, for a per-route
// limit that shares the store.
func (l *Limiter) WithPolicies(policies ...Policy) (*Limiter, error) {
	return New(l.store, policies...)
}

// Policies returns a copy of the limiter's policies.
func (l *Limiter) Policies() []Policy {
	return append([]Policy(nil), l.policies...)
}

// Store returns the limiter's store.
func (l *Limiter) Store() Store { return l.store }

// Allow checks one request from key; it is shorthand for AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	return l.check(ctx, key, 1, true)
}

// AllowN checks a request of the given cost from key and charges it when every policy admits
// it. A cost of 0 charges nothing and reports the current state. A cost above a policy's
// capacity is denied with RetryAfter [Never].
func (l *Limiter) AllowN(ctx context.Context, key string, cost int64) (Decision, error) {
	return l.check(ctx, key, cost, true)
}

// Peek reports what Allow would decide for key, without charging anything.
func (l *Limiter) Peek(ctx context.Context, key string) (Decision, error) {
	return l.check(ctx, key, 1, false)
}

// Refund gives back the charge that decision d made for key — a request that turned out not to
// count (see [CountIf]) — as far as it still weighs on each policy: what time has given back
// already (a bucket that refilled, a window that ended) is not given back twice. A decision
// that charged nothing (denied, a peek, cost 0) refunds nothing.
func (l *Limiter) Refund(ctx context.Context, key string, d Decision) error {
	if key == "" {
		return ErrEmptyKey
	}
	if d.cost == 0 {
		return nil
	}
	return l.store.Refund(ctx, key, l.policies, d.cost, d.at)
}

// Reset forgets everything the limiter's policies hold for key.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if key == "" {
		return ErrEmptyKey
	}
	return l.store.Reset(ctx, key, l.policies)
}

func (l *Limiter) check(ctx context.Context, key string, cost int64, charge bool) (Decision, error) {
	if key == "" {
		return Decision{}, ErrEmptyKey
	}
	if cost < 0 {
		return Decision{}, fmt.Errorf("ratelimit: cost %d is negative", cost)
	}
	var inline [4]algorithms.Result
	raw := inline[:]
	if len(l.policies) > len(inline) {
		raw = make([]algorithms.Result, len(l.policies))
	}
	raw = raw[:len(l.policies)]
	// A cost above a policy's capacity can never be admitted. Such a request is not run
	// through the algorithms (a huge cost would overflow their arithmetic): the store only
	// reports the current state, and those policies deny it for ever.
	tooCostly := false
	for i := range l.policies {
		tooCostly = tooCostly || cost > l.policies[i].Capacity()
	}
	if tooCostly {
		if err := l.storeCheck(ctx, key, 0, false, raw); err != nil {
			return Decision{}, err
		}
		for i := range l.policies {
			if cost > l.policies[i].Capacity() {
				raw[i].Allowed, raw[i].RetryAfter, raw[i].Delay = false, algorithms.Never, 0
			}
		}
		return decide(l.policies, raw), nil
	}
	if err := l.storeCheck(ctx, key, cost, charge, raw); err != nil {
		return Decision{}, err
	}
	d := decide(l.policies, raw)
	if charge && d.Allowed && len(raw) > 0 {
		d.cost, d.at = cost, raw[0].At
	}
	return d, nil
}

// storeCheck asks the store. Direct calls to the stores of this package keep raw on the stack.
func (l *Limiter) storeCheck(ctx context.Context, key string, cost int64, charge bool, raw []algorithms.Result) error {
	switch s := l.store.(type) {
	case *MemoryStore:
		return s.Check(ctx, key, l.policies, cost, charge, raw)
	case *RedisStore:
		return s.Check(ctx, key, l.policies, cost, charge, raw)
	}
	out := make([]algorithms.Result, len(raw))
	err := l.store.Check(ctx, key, l.policies, cost, charge, out)
	copy(raw, out)
	return err
}
