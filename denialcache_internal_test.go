package ratelimit

import (
	"context"
	"testing"
	"time"
)

// A denial answers only for the policy list it was denied under: another list that starts with
// the same policy and is as long (a list and a variant of it) goes to the store; and only for
// the identity denied, not another filed under the same name.
func TestDenialCacheAnswersItsOwnList(t *testing.T) {
	compile := func(p Policy) Policy {
		c, err := p.compile()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := compile(Policy{Name: "a", Limit: 1, Window: time.Minute})
	b := compile(Policy{Name: "b", Limit: 10, Window: time.Hour})
	c := compile(Policy{Name: "c", Limit: 1000, Window: time.Hour})
	clock := &stoppedClock{now: time.Unix(1_700_000_000, 0)}
	cache := newDenialCache(64)
	cache.live.Store(true) // as when the store hears refunds and resets
	denied := []PolicyResult{{Policy: a, RetryAfter: 30 * time.Second}, {Policy: b, Allowed: true, Remaining: 9}}
	ask := func(who string, policies ...Policy) *asked {
		return &asked{id: "k", who: who, policies: policies, cost: 1, at: clock.now, charge: true}
	}
	if !cache.remember(ask("k", a, b), denied) {
		t.Fatal("a denial with a Retry-After was not remembered")
	}
	out := make([]PolicyResult, 2)
	if hit, _ := cache.answer(ask("k", a, b), out); !hit || out[0].Policy.Name != "a" {
		t.Fatalf("the same list: hit %v, %+v; want the cached denial", hit, out)
	}
	if hit, _ := cache.answer(ask("k", a, c), out); hit {
		t.Fatalf("another list starting alike was answered from the cache: %+v", out)
	}
	// Compact keys file identities under a short digest, which another may share.
	if hit, _ := cache.answer(ask("another identity", a, b), out); hit {
		t.Fatalf("another identity filed alike was answered from the cache: %+v", out)
	}
}

// stoppedClock is a clock that never moves.
type stoppedClock struct{ now time.Time }

func (c *stoppedClock) Now() time.Time { return c.now }
func (c *stoppedClock) Sleep(ctx context.Context, d time.Duration) error {
	return ctx.Err()
}
