package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// fallback decides while the store is unavailable: an in-memory store in this process, under
// the same policies with each limit scaled to this instance's share. With n instances and a
// share of 1/n, the fleet admits about the configured limit during an outage. Its state starts
// empty and is not handed back to the store, so a window that spans an outage can admit up to
// twice its limit (see [WithFallback]).
type fallback struct {
	share float64
	store Store // a memory store on the wrapped store's clock
	mu    sync.Mutex
	lists map[*compiledPolicy][]Policy // a limiter's list → the same list scaled
}

func newFallback(share float64, clock Clock, maxKeys int) *fallback {
	opts := []MemoryOption{WithMaxKeys(maxKeys)}
	if clock != nil {
		opts = append(opts, WithClock(clock))
	}
	return &fallback{share: share, store: NewMemoryStore(opts...), lists: map[*compiledPolicy][]Policy{}}
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

// scaled returns policies with their limits scaled to the share, compiled once per list.
func (f *fallback) scaled(policies []Policy) ([]Policy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.lists[policies[0].compiled]; ok && len(s) == len(policies) {
		return s, nil
	}
	s := make([]Policy, len(policies))
	for i, p := range policies {
		q := Policy{Name: p.Name, Limit: f.part(p.Limit), Window: p.Window, Algorithm: p.Algorithm}
		if p.Burst > 0 {
			q.Burst = f.part(p.Burst)
		}
		c, err := q.compile()
		if err != nil {
			return nil, err
		}
		s[i] = c
	}
	f.lists[policies[0].compiled] = s
	return s, nil
}

// part is this instance's share of n: at least 1, so that a fallback never refuses everyone.
func (f *fallback) part(n int64) int64 {
	return max(1, int64(math.Floor(float64(n)*f.share)))
}
