package ratelimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// blockingStore answers only when its context ends: what a store on a dead network does.
type blockingStore struct{ ratelimit.Store }

func (s blockingStore) Check(ctx context.Context, key string, p []ratelimit.Policy, cost int64, charge bool, out []ratelimit.PolicyResult) (time.Time, error) {
	<-ctx.Done()
	return time.Time{}, ctx.Err()
}

// failingStore fails every check.
type failingStore struct{ ratelimit.Store }

func (failingStore) Check(context.Context, string, []ratelimit.Policy, int64, bool, []ratelimit.PolicyResult) (time.Time, error) {
	return time.Time{}, errors.New("connection refused")
}

// localWrapper wraps a store that does I/O, yet declares itself local: a wrapper's own
// declaration wins over the wrapped store's.
type localWrapper struct{ ratelimit.Store }

func (w localWrapper) Unwrap() ratelimit.Store { return w.Store }
func (w localWrapper) Local() bool             { return false }

// sleepRecorder is a clock whose shaping waits are recorded.
type sleepRecorder struct {
	*fakeclock.Clock
	slept []time.Duration
}

func (c *sleepRecorder) Sleep(ctx context.Context, d time.Duration) error {
	c.slept = append(c.slept, d)
	return ctx.Err()
}

// The guard asks a store what it can do, through any number of pass-through wrappers: a local
// store's calls get no deadline, any other's do, and shaping waits on the store's clock.
func TestStoreCapabilities(t *testing.T) {
	serve := func(h http.Handler) int {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		h.ServeHTTP(w, r)
		return w.Code
	}
	policy := ratelimit.Policy{Limit: 1, Window: time.Second}

	// Local: the memory store, twice wrapped. A deadline would make the blocking check fail
	// at once (WithTimeout(1ns)); a local store is called without one, so the check runs.
	mem := passThrough{passThrough{ratelimit.NewMemoryStore()}}
	l := mustNew(t, mem, policy)
	if got := serve(ratelimit.Middleware(l, ratelimit.WithTimeout(time.Nanosecond), ratelimit.WithResponse(ratelimit.Response{FailClosed: 503}))(okHandler)); got != 200 {
		t.Errorf("wrapped memory store: status %d, want 200 (a local store's call has no deadline)", got)
	}

	// Not local: a wrapper that declares so, around the same store. Its calls get the deadline.
	blocked := mustNew(t, localWrapper{blockingStore{ratelimit.NewMemoryStore()}}, policy)
	if got := serve(ratelimit.Middleware(blocked, ratelimit.WithTimeout(time.Millisecond), ratelimit.WithResponse(ratelimit.Response{FailClosed: 503}))(okHandler)); got != 503 {
		t.Errorf("non-local store that never answers: status %d, want 503 after the deadline", got)
	}

	// The clock: shaping waits on the wrapped store's clock.
	clock := &sleepRecorder{Clock: newFakeClock()}
	shaped := mustNew(t, passThrough{ratelimit.NewMemoryStore(ratelimit.WithClock(clock))},
		ratelimit.Policy{Limit: 2, Window: time.Second, Algorithm: algorithms.LeakyBucket{Shaping: true}})
	h := ratelimit.Middleware(shaped)(okHandler)
	serve(h)
	serve(h)
	if len(clock.slept) != 1 || clock.slept[0] != 500*time.Millisecond {
		t.Errorf("shaping waits on the store's clock: %v, want [500ms]", clock.slept)
	}
}

// StorageKey is the layout both stores use: a Redis key of a limiter's state can be found.
func TestStorageKey(t *testing.T) {
	client := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	t.Cleanup(func() { assertAllKeysExpire(t, client, prefix) })
	p := ratelimit.Policy{Name: "api", Limit: 5, Window: time.Minute}
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix)), p)
	allow(t, l, "user:42", 1)
	key := ratelimit.StorageKey(prefix, "user:42", p, false)
	if n, err := client.Exists(ctx, key).Result(); err != nil || n != 1 {
		t.Fatalf("StorageKey(%q, user:42, api, false) = %q, which Redis does not hold (%d, %v)", prefix, key, n, err)
	}
	// The key leaves out the limit and the burst, and names the rest.
	same := ratelimit.Policy{Name: "api", Limit: 6, Window: time.Minute, Burst: 10}
	if other := ratelimit.StorageKey(prefix, "user:42", same, false); other != key {
		t.Errorf("a policy with another limit and burst has another storage key, %q", other)
	}
	for _, p := range []ratelimit.Policy{
		{Name: "api2", Limit: 5, Window: time.Minute},
		{Name: "api", Limit: 5, Window: time.Hour},
		{Name: "api", Limit: 5, Window: time.Minute, Algorithm: algorithms.TokenBucket{}},
	} {
		if other := ratelimit.StorageKey(prefix, "user:42", p, false); other == key {
			t.Errorf("%s %v %T has the same storage key", p.Name, p.Window, p.Algorithm)
		}
	}
}

// Errors have kinds: a store that fails with an error of no kind is of kind other, one that
// names its kind (an ErrorKind method) keeps it, one that does not answer in time is of kind
// timeout (and still context.DeadlineExceeded); all are ErrStore.
func TestErrorKinds(t *testing.T) {
	policy := ratelimit.Policy{Limit: 1, Window: time.Second}
	down := mustNew(t, failingStore{ratelimit.NewMemoryStore()}, policy)
	if _, err := down.Allow(ctx, "k"); observe.ErrorKind(err) != "other" || !errors.Is(err, ratelimit.ErrStore) {
		t.Errorf("failing store: %v (kind %q), want a store error of kind other", err, observe.ErrorKind(err))
	}
	named := mustNew(t, &unreachableStore{}, policy) // its errors say they are of kind unavailable
	if _, err := named.Allow(ctx, "k"); observe.ErrorKind(err) != "unavailable" || !errors.Is(err, ratelimit.ErrStore) ||
		!errors.Is(err, errRefused) {
		t.Errorf("a store naming its kind: %v (kind %q), want a store error of kind unavailable, wrapping the store's", err, observe.ErrorKind(err))
	}
	slow := mustNew(t, blockingStore{ratelimit.NewMemoryStore()}, policy)
	tctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	if _, err := slow.Allow(tctx, "k"); observe.ErrorKind(err) != "timeout" || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("store past its deadline: %v, want one of kind timeout and DeadlineExceeded", err)
	}
}
