package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// racingStore stands for Redis: a memory store whose denial of a check of cost 1, once armed,
// is followed, before its reply reaches the lease layer, by a refund that another instance
// makes (in the store) and announces (raced is told: the subscription heard it).
type racingStore struct {
	Store
	armed bool
	raced func()
}

func (r *racingStore) Unwrap() Store { return r.Store }

func (r *racingStore) Check(ctx context.Context, key string, policies []Policy, cost int64, charge bool, out []PolicyResult) (time.Time, error) {
	at, err := r.Store.Check(ctx, key, policies, cost, charge, out)
	if err == nil && r.armed && cost == 1 && !allAllowed(out) {
		r.armed = false
		r.raced()
	}
	return at, err
}

// A denial of a lease's check whose identity was refunded elsewhere while the check's reply was
// on its way (the announcement heard first, on the subscription's own connection) is not
// answered afterwards: the refund made room, and the lease layer denied the identity until the
// fixed window's end all the same (an hour here), where the denial cache below it, which
// counts the forgets of an identity while a check is out, did not. Found by a review.
func TestLeaseDenialRacingARefundIsNotKept(t *testing.T) {
	clock := fakeclock.New(fakeclock.T0)
	mem := NewMemoryStore(WithClock(clock))
	redis := &racingStore{Store: mem}
	c := newStoreConfig(false)
	leases := leasing(redis, c, newBackground(), nil)
	leases.heard = func() bool { return true }
	l, err := New(leases, Policy{Name: "tenant", Limit: 10, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Other instances spent the quota.
	out := make([]PolicyResult, 1)
	if _, err := mem.Check(ctx, "hot", l.policies, 10, true, out); err != nil || !out[0].Allowed {
		t.Fatalf("spending the quota: %+v, %v", out[0], err)
	}
	if d, err := l.Allow(ctx, "hot"); err != nil || d.Allowed {
		t.Fatalf("first request: %+v, %v; want denied", d, err)
	}
	// The second is hot: a lease is asked, refused, then the request alone, denied; and an
	// instance's refund of a unit is announced before that denial comes back.
	redis.raced = func() {
		if err := mem.Refund(ctx, "hot", l.policies, 1, clock.Now()); err != nil {
			t.Fatal(err)
		}
		leases.forget("hot")
	}
	redis.armed = true
	if d, err := l.Allow(ctx, "hot"); err != nil || d.Allowed {
		t.Fatalf("second request: %+v, %v; want denied", d, err)
	}
	if redis.armed {
		t.Fatal("the refund never raced the denial")
	}
	d, err := l.Allow(ctx, "hot")
	if err != nil || !d.Allowed || d.Source != observe.SourceStore {
		t.Fatalf("the request after the refund was heard: allowed %v by %v, %v; want admitted by the store (1 unit was given back)", d.Allowed, d.Source, err)
	}
}

// A refund through this process ends the identity's denial in the lease layer at once, as it
// does the denial cache's (docs/outages.md: What ends a denial); it waited for the store's announcement
// of it, a message later, and answered the denial meanwhile.
func TestLeaseDenialEndsWithARefundHere(t *testing.T) {
	clock := fakeclock.New(fakeclock.T0)
	mem := NewMemoryStore(WithClock(clock))
	c := newStoreConfig(false)
	leases := leasing(mem, c, newBackground(), nil)
	leases.heard = func() bool { return true } // no announcement comes: nothing publishes
	l, err := New(leases, Policy{Name: "tenant", Limit: 10, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := l.Allow(ctx, "hot") // not hot yet: the store's, a request of its own
	if err != nil || !first.Allowed || first.Source != observe.SourceStore {
		t.Fatalf("first request: %+v, %v", first, err)
	}
	out := make([]PolicyResult, 1) // other instances spend the rest
	if _, err := mem.Check(ctx, "hot", l.policies, 9, true, out); err != nil || !out[0].Allowed {
		t.Fatalf("spending the quota: %+v, %v", out[0], err)
	}
	if d, err := l.Allow(ctx, "hot"); err != nil || d.Allowed || d.Source != observe.SourceStore {
		t.Fatalf("second request: %+v, %v; want denied by the store", d, err)
	}
	if d, err := l.Allow(ctx, "hot"); err != nil || d.Allowed || d.Source != observe.SourceLease {
		t.Fatalf("third request: %+v, %v; want the denial answered by the lease layer", d, err)
	}
	if err := l.Settle(ctx, "hot", first, 0); err != nil {
		t.Fatal(err)
	}
	if d, err := l.Allow(ctx, "hot"); err != nil || !d.Allowed {
		t.Fatalf("after a refund here: allowed %v by %v, %v; want admitted (the refund gave a unit back)", d.Allowed, d.Source, err)
	}
}

// skewedStore stands for Redis, whose TIME runs ahead of this server's clock: a memory store
// on the "server's" clock, declaring this server's clock as the store's (as the Redis store
// declares the system clock while its limits run on the server's TIME).
type skewedStore struct {
	Store
	local Clock
}

func (s *skewedStore) Clock() Clock { return s.local }

// The lease layer times its denials and leases on this server's clock, from when it asked, as
// the denial cache does, not from the time the store reports: with the application server's
// clock 10 s behind Redis, a denial until the end of a fixed window was answered 10 s into the
// next window, which Redis admitted (docs/redis.md: the limits run on the Redis server's TIME, so
// application servers with skewed clocks still agree).
func TestLeaseDenialOnThisServersClock(t *testing.T) {
	server := fakeclock.New(fakeclock.T0.Truncate(time.Minute))
	local := fakeclock.New(server.Now().Add(-10 * time.Second))
	mem := NewMemoryStore(WithClock(server))
	c := newStoreConfig(false)
	leases := leasing(&skewedStore{Store: mem, local: local}, c, newBackground(), nil)
	leases.heard = func() bool { return true }
	l, err := New(leases, Policy{Name: "tenant", Limit: 10, Window: time.Minute, Algorithm: algorithms.FixedWindow{}, Lease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out := make([]PolicyResult, 1) // other instances spent the quota
	if _, err := mem.Check(ctx, "hot", l.policies, 10, true, out); err != nil || !out[0].Allowed {
		t.Fatalf("spending the quota: %+v, %v", out[0], err)
	}
	var last Decision
	for i := range 2 { // the second is hot: its denial is answered by the lease layer from then on
		if last, err = l.Allow(ctx, "hot"); err != nil || last.Allowed {
			t.Fatalf("request %d: %+v, %v; want denied", i+1, last, err)
		}
	}
	if d, err := l.Allow(ctx, "hot"); err != nil || d.Allowed || d.Source != observe.SourceLease {
		t.Fatalf("third request: %+v, %v; want denied by the lease layer", d, err)
	}
	server.Advance(last.RetryAfter)
	local.Advance(last.RetryAfter)
	d, err := l.Allow(ctx, "hot")
	if err != nil || !d.Allowed {
		t.Fatalf("at the Retry-After, the window over: allowed %v by %v, %v; want admitted", d.Allowed, d.Source, err)
	}
}

// resettingStore stands for Redis: a memory store whose next check of more than one unit (a
// lease's) is followed, before its reply reaches the lease layer, by the announcement of a
// reset of the identity made elsewhere (heard is told).
type resettingStore struct {
	Store
	heard func()
}

func (r *resettingStore) Unwrap() Store { return r.Store }

func (r *resettingStore) Check(ctx context.Context, key string, policies []Policy, cost int64, charge bool, out []PolicyResult) (time.Time, error) {
	at, err := r.Store.Check(ctx, key, policies, cost, charge, out)
	if h := r.heard; cost > 1 && h != nil {
		r.heard = nil
		h()
	}
	return at, err
}

// A lease whose check was on its way back when a reset of the identity was heard ends as soon
// as it is taken, giving back what it did not hand out: it is not served after the reset.
func TestLeaseTakenAsAResetIsHeardEnds(t *testing.T) {
	clock := fakeclock.New(fakeclock.T0)
	mem := NewMemoryStore(WithClock(clock))
	redis := &resettingStore{Store: mem}
	leases := leasing(redis, newStoreConfig(false), newBackground(), nil)
	l, err := New(leases, Policy{Name: "tenant", Limit: 100, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if d, err := l.Allow(ctx, "hot"); err != nil || !d.Allowed { // not hot yet
		t.Fatalf("%+v, %v", d, err)
	}
	redis.heard = func() { leases.heardReset(storedIdentity("hot")) }
	if d, err := l.Allow(ctx, "hot"); err != nil || !d.Allowed { // takes a lease of 4, as the reset is heard
		t.Fatalf("%+v, %v", d, err)
	}
	out := make([]PolicyResult, 1)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := mem.Check(ctx, "hot", l.policies, 0, false, out); err != nil {
			t.Fatal(err)
		}
		if out[0].Remaining == 98 || time.Now().After(deadline) {
			break
		}
	}
	if out[0].Remaining != 98 {
		t.Errorf("the store has %d left; want 98: the 2 admitted, the lease's 3 unused given back", out[0].Remaining)
	}
	if d, err := l.Allow(ctx, "hot"); err != nil || d.Source == observe.SourceLease {
		t.Errorf("the next request: from %v, %v; want it not served from the lease taken as the reset was heard", d.Source, err)
	}
}
