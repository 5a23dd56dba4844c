package ratelimit

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// flakyStore stands for Redis: a memory store whose next `fails` checks fail (a stale
// connection after a restart, a READONLY during a failover, a breaker probe: one call fails,
// the next succeeds).
type flakyStore struct {
	Store
	fails atomic.Int32
}

func (f *flakyStore) Check(ctx context.Context, key string, policies []Policy, cost int64, charge bool, out []PolicyResult) (time.Time, error) {
	if f.fails.Add(-1) >= 0 {
		return time.Time{}, errors.New("connection reset by peer")
	}
	return f.Store.Check(ctx, key, policies, cost, charge, out)
}

// leasedOverFlaky builds the layers NewRedisStore builds (lease layer, resilient layer with a
// fallback) over a flaky "Redis".
func leasedOverFlaky(t *testing.T, share float64) (*flakyStore, Store) {
	redis := &flakyStore{Store: NewMemoryStore()}
	c := newStoreConfig(false)
	c.res.share, c.res.denials, c.res.breakerFailures = share, 0, 0
	return redis, leasing(resilient(redis, c), c, newBackground(), nil)
}

// A hot identity's lease check (k units) fails on Redis and the fallback denies k; the
// lease layer asks again for the request alone and Redis admits and charges it. The decision
// is the store's: the fallback's label, left in the results by the first call, is cleared
// when the store answers (it was not, and a refund went to the fallback; found by a review).
func TestRetriedLeaseCheckKeepsTheStoresLabel(t *testing.T) {
	redis, store := leasedOverFlaky(t, 0.001) // the fallback's share: 1 unit an hour
	policy := Policy{Name: "tenant", Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Minute}
	l, err := New(store, policy)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if d, err := l.Allow(ctx, "hot"); err != nil || !d.Allowed || d.Source != observe.SourceStore {
		t.Fatalf("first request: %+v %v", d.Source, err)
	}
	redis.fails.Store(1) // the next Redis call fails, the one after succeeds
	d, err := l.Allow(ctx, "hot")
	if err != nil || !d.Allowed {
		t.Fatalf("second request: allowed %v, %v", d.Allowed, err)
	}
	peek := func() int64 {
		out := make([]PolicyResult, 1)
		if _, err := redis.Store.Check(ctx, "hot", l.policies, 0, false, out); err != nil {
			t.Fatal(err)
		}
		return out[0].Remaining
	}
	if got := peek(); got != 998 {
		t.Fatalf("Redis remaining %d; want 998 (Redis charged the second request)", got)
	}
	if d.Source != observe.SourceStore {
		t.Errorf("a request Redis admitted and charged is labelled %v; want store", d.Source)
	}
	// CountIf's refund of it goes to the fallback, which never charged it; Redis keeps it.
	if err := l.Settle(ctx, "hot", d, 0); err != nil {
		t.Fatal(err)
	}
	if got := peek(); got != 999 {
		t.Errorf("after Refund, Redis remaining %d; want 999 (the refund went to the local fallback)", got)
	}
}

// The same through a fail-closed guard: Redis admits the request, and the guard lets it
// through (it answered 503).
func TestFailClosedAdmitsWhatRedisAdmitted(t *testing.T) {
	redis, store := leasedOverFlaky(t, 0.001)
	policy := Policy{Name: "tenant", Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Minute}
	l, err := New(store, policy)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGuard(l, WithResponse(Response{FailClosed: http.StatusServiceUnavailable}))
	if err != nil {
		t.Fatal(err)
	}
	serve := func() int {
		req := httptest.NewRequest("GET", "/", nil)
		o := g.Check(httpRequest{req})
		return o.Status
	}
	if s := serve(); s != 0 {
		t.Fatalf("first request: status %d", s)
	}
	redis.fails.Store(1)
	if s := serve(); s != 0 {
		t.Errorf("Redis admitted (and charged) the request; the fail-closed guard answered %d", s)
	}
}

// A refund of that decision goes to Redis: misrouted to the fallback, it credited the
// fallback with a unit it never charged, which then admitted 2 in the next outage where its
// share is 1 an hour.
func TestRefundOfARetriedCheckGoesToRedis(t *testing.T) {
	redis, store := leasedOverFlaky(t, 0.001) // the fallback: 1 an hour
	policy := Policy{Name: "tenant", Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Minute}
	l, err := New(store, policy)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fallbackAdmitted := 0
	redis.fails.Store(1) // a blip: the fallback admits the first request, its whole share
	if d, _ := l.Allow(ctx, "hot"); d.Allowed && d.Source == observe.SourceFallback {
		fallbackAdmitted++
	}
	redis.fails.Store(1) // the lease check fails, the fallback denies k, Redis admits the request
	d, _ := l.Allow(ctx, "hot")
	_ = l.Settle(ctx, "hot", d, 0) // CountIf: the response did not count
	redis.fails.Store(1 << 30)     // Redis down for good
	for range 5 {
		if d, _ := l.Allow(ctx, "hot"); d.Allowed && d.Source == observe.SourceFallback {
			fallbackAdmitted++
		}
	}
	if fallbackAdmitted > 1 {
		t.Errorf("the fallback, 1 an hour, admitted %d in the hour", fallbackAdmitted)
	}
}
