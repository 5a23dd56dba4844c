package ratelimit_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/algo"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// holdable are the algorithms a reservation can hold: every one but the in-flight slots and
// shaping.
var holdable = func() []algorithms.Algorithm {
	var out []algorithms.Algorithm
	for _, a := range allAlgorithms {
		if m := algo.Of(a); !m.Shapes() && !algo.Holds(m) {
			out = append(out, a)
		}
	}
	return out
}()

// forEachHoldable runs f on every engine and every algorithm that holds, with a limiter of one
// policy, "tokens", of 100 a window, a key of its own and the clock at t0.
func forEachHoldable(t *testing.T, window time.Duration, f func(t *testing.T, l *ratelimit.Limiter, key string, clock *fakeClock, alg algorithms.Algorithm)) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, alg := range holdable {
			t.Run(alg.Name(), func(t *testing.T) {
				clock.Set(t0)
				f(t, mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 100, Window: window, Algorithm: alg}), keyOf(t), clock, alg)
			})
		}
	})
}

func reserve(t testing.TB, l *ratelimit.Limiter, key string, estimate int64) ratelimit.Decision {
	t.Helper()
	d, err := l.Reserve(ctx, key, estimate)
	if err != nil {
		t.Fatalf("Reserve(%q, %d): %v", key, estimate, err)
	}
	return d
}

func settle(t testing.TB, l *ratelimit.Limiter, key string, d ratelimit.Decision, actual int64) {
	t.Helper()
	if err := l.Settle(ctx, key, d, actual); err != nil {
		t.Fatalf("Settle(%q, %d): %v", key, actual, err)
	}
}

// The case: ten concurrent requests of 100 tokens a minute, each estimated at 20 and
// costing 30. The holds admit five at once (5 × 20 = 100); their settles charge 150, an
// overdraft of 50 that refuses every request until time repays it, with a Retry-After that
// says when. Charged after the fact instead (a check of nothing, then the actual), all ten
// are admitted and 300 charged: the overshoot the holds prevent.
func TestReserveBoundsConcurrentRequests(t *testing.T) {
	forEachHoldable(t, time.Minute, func(t *testing.T, l *ratelimit.Limiter, key string, clock *fakeClock, alg algorithms.Algorithm) {
		var admitted []ratelimit.Decision
		for range 10 {
			if d := reserve(t, l, key, 20); d.Allowed {
				if d.Cost != 20 {
					t.Fatalf("an admitted reservation holds %d, want 20", d.Cost)
				}
				admitted = append(admitted, d)
			}
		}
		if len(admitted) != 5 {
			t.Fatalf("%d of 10 reservations of 20 admitted against 100, want 5", len(admitted))
		}
		clock.Advance(time.Second)
		for _, d := range admitted {
			settle(t, l, key, d, 30)
		}
		d := allow(t, l, key, 1)
		if d.Allowed {
			t.Fatal("a request after an overdraft of 50 admitted")
		}
		// 150 charged of 100: the window refuses until it ends; a rate until 51 units
		// came back (0.6 s each), the one asked included.
		want := time.Minute - time.Second
		if m := algo.Of(alg); m.UsesBurst() {
			want = 51*600*time.Millisecond - time.Second
		}
		if algo.Of(alg).Code() == "sc" {
			want = d.RetryAfter // its estimate weighs the previous window: checked below
		}
		if d.RetryAfter <= 0 || d.RetryAfter > want {
			t.Fatalf("after the overdraft: RetryAfter %v, want %v", d.RetryAfter, want)
		}
		clock.Advance(d.RetryAfter)
		if !allow(t, l, key, 1).Allowed {
			t.Fatalf("a request at its Retry-After (%v) denied", d.RetryAfter)
		}
	})
}

// The comparison: charged after the fact, with no hold, concurrent requests all see the
// quota free until the first of them settles.
func TestChargedAfterOvershoots(t *testing.T) {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))
	l := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Minute})
	var admitted []ratelimit.Decision
	for range 10 {
		if d := allow(t, l, "k", 0); d.Allowed && d.Remaining > 0 {
			admitted = append(admitted, d)
		}
	}
	for _, d := range admitted {
		settle(t, l, "k", d, 30)
	}
	if len(admitted) != 10 {
		t.Fatalf("%d of 10 admitted without holds, want 10 (the overshoot)", len(admitted))
	}
	d := allow(t, l, "k", 0)
	if d.Remaining != 0 {
		t.Fatalf("after 300 charged of 100: Remaining %d", d.Remaining)
	}
}

// A hold that outlives its lifetime (its request never settled: its instance died) is given
// back by the next reservation: the capacity is back and nothing was charged.
func TestHoldExpires(t *testing.T) {
	forEachHoldable(t, time.Hour, func(t *testing.T, l *ratelimit.Limiter, key string, clock *fakeClock, alg algorithms.Algorithm) {
		for range 5 {
			if !reserve(t, l, key, 20).Allowed {
				t.Fatal("a reservation within the limit denied")
			}
		}
		if reserve(t, l, key, 20).Allowed {
			t.Fatal("a sixth reservation of 20 admitted against 100")
		}
		clock.Advance(5*time.Minute - time.Microsecond)
		if reserve(t, l, key, 20).Allowed {
			t.Fatal("a reservation admitted before the holds expired")
		}
		clock.Advance(2 * time.Microsecond)
		n := 0
		for range 10 {
			if reserve(t, l, key, 20).Allowed {
				n++
			}
		}
		if n != 5 {
			t.Fatalf("after the holds expired, %d reservations of 20 admitted, want 5: the expired holds charged something", n)
		}
	})
}

// Settling at less than the estimate gives the rest back; a second settle is refused and
// charges nothing; a negative actual is refused.
func TestSettleBadInput(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		key := keyOf(t)
		l := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Minute})
		d := reserve(t, l, key, 40)
		if err := l.Settle(ctx, key, d, -1); !errors.Is(err, ratelimit.ErrBadRequest) {
			t.Fatalf("Settle(-1): %v, want ErrBadRequest", err)
		}
		if _, err := l.Reserve(ctx, key, -1); !errors.Is(err, ratelimit.ErrBadRequest) {
			t.Fatalf("Reserve(-1): %v, want ErrBadRequest", err)
		}
		settle(t, l, key, d, 10)
		if err := l.Settle(ctx, key, d, 50); !errors.Is(err, ratelimit.ErrBadRequest) {
			t.Fatalf("a second Settle: %v, want ErrBadRequest", err)
		}
		if got := allow(t, l, key, 0).Remaining; got != 90 {
			t.Fatalf("after a settle of 10: Remaining %d, want 90", got)
		}
	})
}

// An estimate above half the limit holds half; the settle charges the actual all the same.
func TestEstimateClamped(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())), ratelimit.Policy{Limit: 100, Window: time.Minute})
	d := reserve(t, l, "k", 1000)
	if !d.Allowed || d.Cost != 50 {
		t.Fatalf("an estimate of 1000 against 100: allowed %v, holds %d; want 50", d.Allowed, d.Cost)
	}
	if d := reserve(t, l, "k", 0); d.Cost != 1 {
		t.Fatalf("an estimate of 0 holds %d, want 1", d.Cost)
	}
	// A client cannot make the store keep more than 1,024 holds of one identity's list at
	// once (each one a record): below a 1,024th of the least capacity (rounded up), an estimate
	// holds that.
	big := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())),
		ratelimit.Policy{Limit: 1_000_000, Window: time.Minute}, ratelimit.Policy{Limit: 10_240_000, Window: time.Hour})
	if d := reserve(t, big, "k", 1); d.Cost != 977 {
		t.Fatalf("an estimate of 1 against a million holds %d, want 977 (1,000,000 / 1,024, rounded up)", d.Cost)
	}
	admitted := 1
	for reserve(t, big, "k", 1).Allowed {
		admitted++
	}
	if admitted > 1024 {
		t.Fatalf("%d holds of one identity admitted at once, want at most 1024", admitted)
	}
}

// A reset forgets the identity's holds with its state (on Redis, the list's holds key): a
// settle of a reservation made before it charges its whole actual, the hold being gone, and
// the expiry of the holds it forgot gives nothing back that the reset did not.
func TestResetForgetsHolds(t *testing.T) {
	forEachHoldable(t, time.Hour, func(t *testing.T, l *ratelimit.Limiter, key string, clock *fakeClock, alg algorithms.Algorithm) {
		var before []ratelimit.Decision
		for range 5 {
			before = append(before, reserve(t, l, key, 20))
		}
		if err := l.Reset(ctx, key); err != nil {
			t.Fatal(err)
		}
		settle(t, l, key, before[0], 30)
		if got := allow(t, l, key, 0).Remaining; got != 70 {
			t.Fatalf("a settle of 30 after the reset: Remaining %d, want 70 (the whole actual charged)", got)
		}
		// The four others are never settled: their lifetime ends, and a reservation
		// finds what time gave back (at most 100/h × 5 min, 9), not their estimates.
		clock.Advance(5*time.Minute + time.Microsecond)
		settle(t, l, key, reserve(t, l, key, 1), 0)
		if got := allow(t, l, key, 0).Remaining; got > 70+9 {
			t.Fatalf("after the forgotten holds' lifetime: Remaining %d, want at most 79: their expiry gave back what the reset forgot", got)
		}
	})
}

// With compact state, an identity's hash tag is four characters of a digest, which other
// identities share (two of a few thousand, found here): the record of one's
// holds is not the other's, so that a call of one never gives back the other's expired holds
// to its own policies (which would leave the other charged for a hold that expired).
func TestCompactHoldsKeepIdentitiesApart(t *testing.T) {
	for _, hash := range []bool{false, true} {
		t.Run("hash="+strconv.FormatBool(hash), func(t *testing.T) {
			prefix := redistest.Prefix(t)
			p := ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Hour, Algorithm: algorithms.FixedWindow{}}
			seen := map[string]string{}
			var a, b string
			for i := 0; a == ""; i++ {
				id := "user" + strconv.Itoa(i)
				tag := ratelimit.StorageKey(prefix, id, p, true)[:6] // "{" + 4 characters + "}"
				a, b = seen[tag], id
				seen[tag] = id
			}
			clock := newFakeClock()
			opts := []ratelimit.RedisOption{ratelimit.WithPrefix(prefix), ratelimit.WithCompactState(), ratelimit.WithClock(clock)}
			if hash {
				opts = append(opts, ratelimit.WithHashState())
			}
			client := redistest.Standalone(t)
			t.Cleanup(func() { assertAllKeysExpire(t, client, prefix) })
			l := mustNew(t, ratelimit.NewRedisStore(client, opts...), p)
			reserve(t, l, a, 20)
			clock.Advance(5*time.Minute + time.Microsecond) // a's hold expired
			settle(t, l, b, reserve(t, l, b, 1), 0)
			settle(t, l, a, reserve(t, l, a, 1), 0) // gives back a's hold
			if got := allow(t, l, a, 0).Remaining; got != 100 {
				t.Fatalf("%s after its expired hold was given back, with %s sharing its hash tag: Remaining %d, want 100", a, b, got)
			}
		})
	}
}
