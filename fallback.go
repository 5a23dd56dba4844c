package ratelimit

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// fallback decides while the store is unavailable: an in-memory store in this process, under
// the same policies with each limit scaled to this instance's share. With n instances and a
// share of 1/n, the fleet admits about the configured limit during an outage. Its state starts
// empty and is not handed back to the store, so a window that spans an outage can admit one
// burst more than the policy does through the store: twice the limit of a fixed window (see
// [WithFallback]).
type fallback struct {
	share float64
	log   logs  // the store's
	store Store // a memory store on the wrapped store's clock

	mu sync.RWMutex
	// lists are the scaled lists made so far, by the first policy of the list they scale
	// (most lists are alone under their first policy); n counts them, and compiled counts the
	// lists ever scaled (tests).
	lists    map[*compiledPolicy][]scaledList
	n        int
	compiled int
}

// scaledList is a list of policies and the same list scaled to the share.
type scaledList struct {
	of     []*compiledPolicy
	scaled []Policy
}

// maxScaledLists bounds the lists a fallback keeps: a Resolver can make new lists all the
// time, and a long outage must not make them a leak. Past it, the fallback starts afresh.
const maxScaledLists = 1024

// newFallback returns the fallback of a store configured by c: its memory store logs where the
// store does and reports to its observer (a full fallback is told as any memory store).
func newFallback(c *storeConfig) *fallback {
	opts := []StoreOption{WithMaxKeys(c.maxKeys)}
	if c.clock != nil {
		opts = append(opts, WithClock(c.clock))
	}
	if c.logger != nil {
		opts = append(opts, WithLogger(c.logger))
	}
	if c.res.observer != nil {
		opts = append(opts, WithObserver(c.res.observer))
	}
	store := NewMemoryStore(opts...)
	if m, ok := capability[*memoryStore](store); ok {
		m.of = "the local fallback (WithFallback)"
	}
	return &fallback{share: c.res.share, log: logs{c.logger}, store: store, lists: map[*compiledPolicy][]scaledList{}}
}

// check decides on the local store, under the scaled policies.
func (f *fallback) check(ctx context.Context, key string, policies []Policy, cost int64, charge bool, out []PolicyResult) (time.Time, error) {
	scaled, err := f.scaled(policies)
	if err != nil {
		return time.Time{}, err
	}
	at, err := f.store.Check(ctx, key, scaled, cost, charge, out)
	for i := range out {
		out[i].source = observe.SourceFallback
	}
	return at, err
}

// scaled returns policies with their limits scaled to the share, compiled once per list: the
// whole list, policy by policy, so that lists that share a first policy (a check and the
// release of its in-flight slots) do not take each other's place.
func (f *fallback) scaled(policies []Policy) ([]Policy, error) {
	f.mu.RLock()
	s := f.lookup(policies)
	f.mu.RUnlock()
	if s != nil {
		return s, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.lookup(policies); s != nil { // scaled by another goroutine meanwhile
		return s, nil
	}
	s = make([]Policy, len(policies))
	for i, p := range policies {
		q := p // every field, Shadow too: only the limit and the burst are the share's
		q.Limit = f.part(p.Limit)
		if p.Burst > 0 {
			q.Burst = f.part(p.Burst)
		}
		c, err := q.compile()
		if err != nil {
			if c, err = decidable(q); err == nil { // once per list: scaled lists are kept
				f.log.get().Info("ratelimit: the local fallback decides a policy's share on a lower limit, the largest it can decide exactly",
					"policy", p.Name, "share", q.Limit, "limit", c.Limit, "burst", c.Burst)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: WithFallback(%g) cannot scale policy %q to its share (limit %d, burst %d): %w",
				errInvalidPolicy, f.share, p.Name, q.Limit, q.Burst, err)
		}
		s[i] = c.samePeriod(&p) // a calendar policy in its period
	}
	if f.n == maxScaledLists {
		clear(f.lists)
		f.n = 0
	}
	of := make([]*compiledPolicy, len(policies))
	for i := range policies {
		of[i] = policies[i].compiled
	}
	f.lists[of[0]] = append(f.lists[of[0]], scaledList{of, s})
	f.n++
	f.compiled++
	return s, nil
}

// decidable returns q with the largest limit below its own (at least half of it) that it can
// decide exactly, and its burst lowered alike. A share of a valid limit may not be: 10,000,000
// a day is exact, a third of it (3,333,333, which shares only 3 with the day's
// microseconds) is not, and 3,333,330 is. The fallback is an approximation of the limit
// anyway; it errs below.
func decidable(q Policy) (Policy, error) {
	limit, burst := q.Limit, q.Burst
	var err error
	for d := limit - 1; d >= max(1, limit/2, limit-maxDecidableSteps); d-- {
		q.Limit = d
		if burst > 0 {
			q.Burst = max(1, burst*d/limit)
		}
		var c Policy
		if c, err = q.compile(); err == nil {
			return c, nil
		}
	}
	return q, err
}

// maxDecidableSteps bounds the limits decidable tries: a limit ending in three zeros is never
// more than a thousand away.
const maxDecidableSteps = 4096

// lookup returns the scaled list of policies, or nil. The caller holds f.mu.
func (f *fallback) lookup(policies []Policy) []Policy {
	for _, l := range f.lists[policies[0].compiled] {
		if samePolicies(l.of, policies) {
			return l.scaled
		}
	}
	return nil
}

// samePolicies reports whether policies are, one by one, the compiled policies of.
func samePolicies(of []*compiledPolicy, policies []Policy) bool {
	if len(of) != len(policies) {
		return false
	}
	for i := range of {
		if of[i] != policies[i].compiled {
			return false
		}
	}
	return true
}

// part is this instance's share of n: at least 1, so that a fallback never refuses everyone.
func (f *fallback) part(n int64) int64 {
	return max(1, int64(math.Floor(float64(n)*f.share)))
}
