package ratelimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// TestShapedClientGoneReleasesSlot: a list with a shaping leaky bucket and an in-flight limit.
// A request admitted with a Delay holds its slot while it waits; its client leaves during the
// wait (499). The slot comes back (docs/policies.md, in-flight limits: "also when ... its client goes away"): the next
// request, with nothing running, is not refused for want of a slot. (It was renewed for as
// long as the process ran: every later request refused; found by a review.)
func TestShapedClientGoneReleasesSlot(t *testing.T) {
	clock := &leavingClock{Clock: fakeclock.New(fakeclock.T0)}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock))
	l, err := ratelimit.New(store,
		ratelimit.Policy{Name: "shape", Limit: 1, Window: time.Second, Burst: 10, Algorithm: algorithms.LeakyBucket{Shaping: true}},
		ratelimit.Policy{Name: "slots", Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	do := func(ctx context.Context) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil).WithContext(ctx))
		return w.Code
	}
	if c := do(context.Background()); c != 200 { // no delay: the queue was empty
		t.Fatalf("first: %d", c)
	}
	clock.leave = true
	if c := do(context.Background()); c != 499 { // admitted with a delay of 1 s, client gone during the wait
		t.Fatalf("second: %d, want 499", c)
	}
	clock.leave = false
	clock.Advance(10 * time.Second) // the queue drains; nothing runs
	if c := do(context.Background()); c != 200 {
		t.Fatalf("third, with nothing running: %d; want 200 (the slot of the 499 leaked)", c)
	}
}

// leavingClock is the fake clock whose shaping waits end as if the client went away while
// leave is set.
type leavingClock struct {
	*fakeclock.Clock
	leave bool
}

func (c *leavingClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.leave {
		return context.Canceled
	}
	return c.Clock.Sleep(ctx, d)
}
