package ratelimit

import (
	"context"
	"fmt"
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

// A denial over, one request asks the store again while the others are still denied from the
// cache; but only for refreshPatience: when that request has no answer by then (a slow Redis,
// a goroutine that waits for a core, an answer that never comes back), the next asks too, so a
// stalled call does not deny the identity past its Retry-After for as long as it takes. Each
// answer that comes back then settles the denial as usual.
func TestDenialCacheRefreshIsPatientOnlySoLong(t *testing.T) {
	p, err := (&Policy{Name: "a", Limit: 100, Window: time.Second}).compile()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	cache := newDenialCache(64)
	cache.live.Store(true) // as when the store hears refunds and resets
	ask := func(at time.Duration) *asked {
		return &asked{id: "k", who: "k", policies: []Policy{p}, cost: 1, at: t0.Add(at), charge: true}
	}
	if !cache.remember(ask(0), []PolicyResult{{Policy: p, RetryAfter: 10 * time.Millisecond}}) {
		t.Fatal("a denial with a Retry-After was not remembered")
	}
	out := make([]PolicyResult, 1)
	step := func(at time.Duration, wantHit, wantRefresh bool) {
		t.Helper()
		if hit, refresh := cache.answer(ask(at), out); hit != wantHit || refresh != wantRefresh {
			t.Fatalf("at %v: hit %v, refresh %v; want %v, %v", at, hit, refresh, wantHit, wantRefresh)
		}
	}
	step(5*time.Millisecond, true, false)                      // denied until its Retry-After
	step(10*time.Millisecond, false, true)                     // over: this one asks the store
	step(10*time.Millisecond+refreshPatience/2, true, false)   // the others wait for its answer
	step(10*time.Millisecond+refreshPatience, false, true)     // no answer yet: the next asks too
	step(10*time.Millisecond+3*refreshPatience/2, true, false) // and the others wait for either
	// The first answer comes back: admitted, with room left (the denial is forgotten).
	cache.settle(ask(10*time.Millisecond), []PolicyResult{{Policy: p, Allowed: true, Remaining: 3}}, nil)
	step(12*time.Millisecond, false, false)
	// The second, late, finds nothing to settle.
	cache.settle(ask(10*time.Millisecond+refreshPatience), []PolicyResult{{Policy: p, Allowed: true, Remaining: 2}}, nil)
	step(12*time.Millisecond, false, false)

	// A refresh whose answer never came back does not keep the entry from the room a full
	// cache makes: past its patience, it is an ended denial like any other. Another identity
	// of the same shard, its denial ended too, is what makeRoom frees while k still asks (with
	// nothing ended to free, it would drop an identity at random).
	sh := cache.shard("k")
	other := ""
	for i := 0; other == ""; i++ {
		if id := fmt.Sprint("o", i); cache.shard(id) == sh {
			other = id
		}
	}
	for _, id := range []string{"k", other} {
		q := ask(20 * time.Millisecond)
		q.id, q.who = id, id
		if !cache.remember(q, []PolicyResult{{Policy: p, RetryAfter: time.Millisecond}}) {
			t.Fatal("a denial with a Retry-After was not remembered")
		}
	}
	step(21*time.Millisecond, false, true)
	sh.mu.Lock()
	sh.makeRoom((21*time.Millisecond + refreshPatience/2 + time.Duration(t0.UnixNano())).Microseconds())
	kept, freed := len(sh.entries["k"]), len(sh.entries[other]) == 0
	sh.makeRoom((21*time.Millisecond + refreshPatience + time.Duration(t0.UnixNano())).Microseconds())
	left := len(sh.entries["k"])
	sh.mu.Unlock()
	if kept != 1 || !freed || left != 0 {
		t.Fatalf("makeRoom kept %d denials while a refresh was asking (want 1, the ended one of %s freed: %v) and %d after its patience (want 0)", kept, other, freed, left)
	}
}
