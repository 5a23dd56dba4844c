package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/calendar"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// Calendar quotas beside hashed policies (WithHashState), found by an adversarial review: a
// calendar period keeps a key of its own, and a check of a list that also holds policies kept
// in the identity's hash wrote it as a field of that hash, named by the key: so a list of the
// quota alone and one with a further window counted it apart (twice the quota), Reset left the
// field, and a settle's overdraft went to the key no check read. Each test failed so.

// daily is a calendar quota of 3 a day in UTC.
func daily() ratelimit.Policy {
	return ratelimit.Policy{Name: "daily", Limit: 3, Period: &calendar.Period{Unit: calendar.Day, Zone: time.UTC}}
}

// docs/redis.md: "Lists of different lengths that share an identity and a policy (plans, a
// Resolver, a limit that gains a window) share its field, as they share its key without the
// option." A calendar policy does not: alone it keeps its own key, beside a hashed policy a
// field of the hash named by that key; the two lists count the same daily quota twice.
func TestCalendarQuotaBesideHashedPoliciesIsOneCount(t *testing.T) {
	client := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	ctx := context.Background()
	clock := newFakeClock()
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithHashState(), ratelimit.WithClock(clock))
	alone := mustNew(t, store, daily())
	withBurst := mustNew(t, store, ratelimit.Policy{Name: "burst", Limit: 100, Window: time.Second}, daily())
	admitted := 0
	for i := 0; i < 3; i++ {
		if d, err := alone.Allow(ctx, "u"); err != nil {
			t.Fatal(err)
		} else if d.Allowed {
			admitted++
		}
	}
	for i := 0; i < 3; i++ {
		if d, err := withBurst.Allow(ctx, "u"); err != nil {
			t.Fatal(err)
		} else if d.Allowed {
			admitted++
		}
	}
	t.Logf("keys %v", client.Keys(ctx, prefix+"*").Val())
	if admitted > 3 {
		t.Fatalf("one identity's daily quota of 3 admitted %d requests across two lists sharing the policy", admitted)
	}
}

// Limiter.Reset of a list with a calendar policy beside a hashed one leaves the calendar count.
// Reset forgets a calendar quota kept beside hashed policies.
func TestResetForgetsACalendarQuotaBesideHashedPolicies(t *testing.T) {
	client := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	ctx := context.Background()
	clock := newFakeClock()
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithHashState(), ratelimit.WithClock(clock))
	l := mustNew(t, store, ratelimit.Policy{Name: "burst", Limit: 100, Window: time.Second}, daily())
	for i := 0; i < 3; i++ {
		if d, err := l.Allow(ctx, "u"); err != nil || !d.Allowed {
			t.Fatalf("%d: %+v %v", i, d, err)
		}
	}
	if err := l.Reset(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	d, err := l.Allow(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after reset: keys %v fields %v", client.Keys(ctx, prefix+"*").Val(), client.HGetAll(ctx, prefix+"{u}").Val())
	if !d.Allowed {
		t.Fatalf("after Reset the daily quota is still spent: %+v", d)
	}
}

// A settle's overdraft on a calendar quota beside a hashed policy refuses the next requests.
func TestSettleOverdraftOfACalendarQuotaBesideHashedPolicies(t *testing.T) {
	client := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	ctx := context.Background()
	clock := newFakeClock()
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithHashState(), ratelimit.WithClock(clock))
	l := mustNew(t, store,
		ratelimit.Policy{Name: "burst", Limit: 1000, Window: time.Second},
		ratelimit.Policy{Name: "daily", Limit: 10, Period: &calendar.Period{Unit: calendar.Day, Zone: time.UTC}})
	d, err := l.Reserve(ctx, "u", 1)
	if err != nil || !d.Allowed {
		t.Fatalf("Reserve: %+v %v", d, err)
	}
	if err := l.Settle(ctx, "u", d, 9); err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for i := 0; i < 20; i++ {
		d, err := l.Allow(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	t.Logf("keys %v, hash %v", client.Keys(ctx, prefix+"*").Val(), client.HGetAll(ctx, prefix+"{u}").Val())
	if admitted > 1 {
		t.Fatalf("after a settle of 9 on a daily quota of 10, %d more requests were admitted (want 1)", admitted)
	}
}
