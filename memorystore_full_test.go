package ratelimit_test

import (
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// fullCounter counts what a memory store at its bound tells its observer.
type fullCounter struct {
	answers
	mu                 sync.Mutex
	evicted, overflows int
}

func (f *fullCounter) MemoryStoreFull(overflow bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if overflow {
		f.overflows++
	} else {
		f.evicted++
	}
}

// observer returns the hooks that count into f.
func (f *fullCounter) observer() *ratelimit.Observer {
	o := f.answers.observer()
	o.MemoryStoreFull = f.MemoryStoreFull
	return o
}

// A flood of a million fresh identities at the bound (a hundred thousand under the race
// detector: a hundred times the bound) neither resets an exhausted identity nor locks out a
// newcomer; an identity that used more than half its limit keeps its count; the store says
// once that it is full, and counts what it forgot.
func TestMemoryStoreFlood(t *testing.T) {
	clock := newFakeClock()
	var logged syncBuffer
	obs := &fullCounter{}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithMaxKeys(1000),
		ratelimit.WithObserver(obs.observer()), ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	l := mustNew(t, store, ratelimit.Policy{Limit: 5, Window: time.Hour})
	for range 6 {
		allow(t, l, "victim", 1)
	}
	for range 3 {
		allow(t, l, "regular", 1) // 3 of 5: more than half, kept
	}
	const flood = 1_000_000 / raceShrink
	for i := range flood {
		if !allow(t, l, "flood-"+strconv.Itoa(i), 1).Allowed {
			t.Fatalf("flood identity %d refused: the full store locks newcomers out", i+1)
		}
	}
	if d := allow(t, l, "victim", 1); d.Allowed {
		t.Errorf("the exhausted identity was admitted after the flood: %+v", d)
	}
	if d := allow(t, l, "newcomer", 1); !d.Allowed || d.Remaining != 4 {
		t.Errorf("a newcomer after the flood: %+v; want admitted with 4 left", d)
	}
	for i := range 3 {
		if d := allow(t, l, "regular", 1); d.Allowed != (i < 2) {
			t.Errorf("the regular identity's request %d after the flood: allowed %v; want its 2 left, then refused", 4+i, d.Allowed)
		}
	}
	if obs.evicted < flood-1000 || obs.overflows != 0 {
		t.Errorf("reported %d evictions, %d overflow decisions; want at least %d evictions, none on the overflow quota",
			obs.evicted, obs.overflows, flood-1000)
	}
	if n := strings.Count(logged.String(), "memory store is full"); n != 1 {
		t.Errorf("logged %d lines saying the store is full; want 1:\n%s", n, logged.String())
	}
}

// Over-admission at the bound: an identity forgotten to make room had used less than half its
// limit, so it gains less than half its limit each time; here 2 of 5, then 5 more.
func TestMemoryStoreEvictionOverAdmission(t *testing.T) {
	clock := newFakeClock()
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithMaxKeys(64)) // 1 key per shard
	l := mustNew(t, store, ratelimit.Policy{Limit: 5, Window: time.Hour, Algorithm: allAlgorithms[0]})
	admitted := 0
	take := func() {
		for allow(t, l, "light", 1).Allowed {
			admitted++
		}
	}
	for range 2 {
		if allow(t, l, "light", 1).Allowed {
			admitted++
		}
	}
	for i := 0; i < 10_000; i++ {
		allow(t, l, "flood-"+strconv.Itoa(i), 1)
	}
	take()
	if admitted > 5+2 {
		t.Errorf("the forgotten identity was admitted %d times in its window; want at most 7 (5, and the 2 it had used)", admitted)
	}
	if admitted <= 5 {
		t.Logf("the light identity was not forgotten (%d admitted)", admitted)
	}
}

// When every identity a full shard holds has used half its limit or more, a new identity is
// decided on the shard's overflow quota: newcomers share it, so over the whole store they get
// at most one limit per shard per window, and nobody is forgotten.
func TestMemoryStoreOverflow(t *testing.T) {
	clock := newFakeClock()
	obs := &fullCounter{}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithMaxKeys(64), ratelimit.WithObserver(obs.observer()))
	l := mustNew(t, store, ratelimit.Policy{Limit: 2, Window: time.Hour})
	// Exhaust identities until a shard is full of them.
	var held []string
	admitted := 0
	for i := 0; obs.overflows == 0; i++ {
		id := "heavy-" + strconv.Itoa(i)
		for range 2 {
			if allow(t, l, id, 1).Allowed {
				admitted++
			}
		}
		held = append(held, id)
	}
	newcomers := 0
	for i := range 1000 {
		if allow(t, l, "newcomer-"+strconv.Itoa(i), 1).Allowed {
			newcomers++
		}
	}
	// Each shard holds one identity (its limit, 2) and has an overflow quota (2 more).
	if admitted+newcomers > 64*(2+2) || newcomers == 0 || obs.overflows < 1000-64 {
		t.Errorf("admitted %d requests of exhausted identities and %d newcomers, %d decided on the overflow quota; want some newcomers, at most 256 in all",
			admitted, newcomers, obs.overflows)
	}
	for _, id := range held[:len(held)-1] { // the last may itself have been decided on the overflow quota
		if allow(t, l, id, 1).Allowed {
			t.Fatalf("%s, exhausted, was admitted: the full store forgot it", id)
		}
	}
	if obs.evicted != 0 {
		t.Errorf("%d identities forgotten; want none (every one had used its limit)", obs.evicted)
	}
	// The overflow quota refills with its window.
	clock.Advance(time.Hour)
	if !allow(t, l, "newcomer-later", 1).Allowed {
		t.Error("a newcomer an hour later was refused")
	}
}

// A peek at an identity a full shard cannot hold reports what a check of it would get, the
// overflow quota's state, not a fresh identity's: with that quota spent, Allow denies it, and
// so must Peek. The peek charges nothing, forgets no one, and is no overflow decision.
func TestMemoryStorePeekAtTheBound(t *testing.T) {
	clock := newFakeClock()
	obs := &fullCounter{}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithMaxKeys(64), ratelimit.WithObserver(obs.observer()))
	l := mustNew(t, store, ratelimit.Policy{Limit: 2, Window: time.Hour})
	for i := range 5000 { // every shard (one identity each) full of exhausted identities
		for range 2 {
			allow(t, l, "heavy-"+strconv.Itoa(i), 1)
		}
	}
	before := obs.overflows
	for i := 0; i < 100 && allow(t, l, "newcomer", 1).Allowed; i++ { // its shard's overflow quota spent
	}
	if d := allow(t, l, "newcomer", 1); d.Allowed || obs.overflows == before {
		t.Fatalf("the newcomer after its overflow quota was spent: %+v, %d overflow decisions; want denied, on the overflow quota", d, obs.overflows-before)
	}
	overflows, evicted := obs.overflows, obs.evicted
	d, err := l.Peek(ctx, "newcomer")
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 {
		t.Errorf("Peek of the newcomer: allowed %v, remaining %d, retry after %v; want what Allow gets: denied, 0 left, a Retry-After",
			d.Allowed, d.Remaining, d.RetryAfter)
	}
	if obs.overflows != overflows || obs.evicted != evicted {
		t.Errorf("the peek made %d overflow decisions and forgot %d identities; want none", obs.overflows-overflows, obs.evicted-evicted)
	}
	// A newcomer of a shard with room left is peeked at as it is: fresh.
	roomy := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithMaxKeys(64)), ratelimit.Policy{Limit: 2, Window: time.Hour})
	if d, err := roomy.Peek(ctx, "newcomer"); err != nil || !d.Allowed || d.Remaining != 1 {
		t.Errorf("Peek of a newcomer with room: %+v, %v; want allowed, 1 left after it", d, err)
	}
}

// An identity whose own state refuses it is refused, even when its shard is full and one of
// its policies has no entry there yet: its own denial decides, as before the shard was full,
// and the overflow quota (whose state is not its) neither admits it nor is asked. Here it
// spent an hourly limit under a limiter of that policy alone; a limiter that adds a policy
// (as a rules reload does) then checks it, in a shard full of identities that used all of
// theirs. Found reviewing the peek at the bound: the no-charge path answered from the
// overflow quota for a denied charge too, which admitted the identity, charged nothing.
func TestMemoryStoreFullDeniesByOwnState(t *testing.T) {
	clock := newFakeClock()
	obs := &fullCounter{}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithMaxKeys(128), ratelimit.WithObserver(obs.observer()))
	hourly := ratelimit.Policy{Name: "hourly", Limit: 2, Window: time.Hour}
	perSecond := ratelimit.Policy{Name: "per-second", Limit: 100, Window: time.Second}
	before := mustNew(t, store, hourly)
	for range 2 {
		allow(t, before, "spent", 1)
	}
	if d := allow(t, before, "spent", 1); d.Allowed {
		t.Fatalf("the identity after its hourly limit: %+v; want denied", d)
	}
	fill := mustNew(t, store, ratelimit.Policy{Name: "fill", Limit: 1, Window: time.Hour})
	for i := range 5000 { // every shard (two identities each) full of exhausted identities
		allow(t, fill, "heavy-"+strconv.Itoa(i), 1)
	}
	after := mustNew(t, store, hourly, perSecond)
	overflows := obs.overflows
	for i := range 5 {
		if d := allow(t, after, "spent", 1); d.Allowed {
			t.Fatalf("request %d of the spent identity with a policy added, its shard full: allowed (%+v); want denied by its hourly limit", i, d)
		}
		d, err := after.Peek(ctx, "spent")
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			t.Fatalf("peek %d of the spent identity with a policy added, its shard full: allowed (%+v); want denied by its hourly limit", i, d)
		}
	}
	if obs.overflows != overflows {
		t.Errorf("%d overflow decisions for an identity its own state refused; want none", obs.overflows-overflows)
	}
}

// The overflow quota is never forgotten to make room: it is what a newcomer the store cannot
// hold is limited by. Forgotten whenever it had used less than half its limit, as an identity
// is, it started afresh for every request, so an identity the store could not hold was never
// limited: 1,000 of 1,000 admitted under 10 an hour, and counted as identities forgotten
// (found by a review).
func TestMemoryStoreOverflowIsKept(t *testing.T) {
	obs := &fullCounter{}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()), ratelimit.WithMaxKeys(64), ratelimit.WithObserver(obs.observer()))
	api := mustNew(t, store, ratelimit.Policy{Name: "api", Limit: 2, Window: time.Hour})
	for i := range 2000 { // every shard full of identities that used their limit
		allow(t, api, "heavy-"+strconv.Itoa(i), 2)
	}
	login := mustNew(t, store, ratelimit.Policy{Name: "login", Limit: 10, Window: time.Hour})
	evicted, admitted := obs.evicted, 0
	for range 1000 {
		if allow(t, login, "newcomer", 1).Allowed {
			admitted++
		}
	}
	if admitted == 0 || admitted > 10 {
		t.Errorf("an identity the full store cannot hold was admitted %d times under 10 an hour; want 1 to 10 (its shard's overflow quota)", admitted)
	}
	if n := obs.evicted - evicted; n != 0 {
		t.Errorf("%d identities reported forgotten; want none (every one had used its limit)", n)
	}
}

// A request decided on a full shard's overflow quota was charged there, and what gives its
// charge back gives it back there: a refund (CountIf) and the release of in-flight slots. They
// went to the identity's own state, which the store does not hold, so the overflow quota kept
// every charge: newcomers were refused requests that did not count, and slots of requests that
// had ended (found by a review).
func TestMemoryStoreOverflowGivesBack(t *testing.T) {
	for name, policy := range map[string]ratelimit.Policy{
		"refund":  {Name: "rate", Limit: 4, Window: time.Hour},
		"release": {Name: "slots", Limit: 4, Window: time.Hour, Algorithm: algorithms.InFlight{}},
	} {
		t.Run(name, func(t *testing.T) {
			obs := &fullCounter{}
			store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()), ratelimit.WithMaxKeys(64), ratelimit.WithObserver(obs.observer()))
			l := mustNew(t, store, policy)
			// Identities that used half their limit, kept, until a shard is full of them.
			for i := 0; obs.overflows == 0; i++ {
				allow(t, l, "half-"+strconv.Itoa(i), 2)
			}
			// A newcomer the store cannot hold: decided on its shard's overflow quota.
			newcomer := ""
			for i := 0; newcomer == ""; i++ {
				before, id := obs.overflows, "newcomer-"+strconv.Itoa(i)
				d := allow(t, l, id, 1)
				if obs.overflows > before {
					newcomer = id
				}
				if err := l.Settle(ctx, id, d, 0); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 8 {
				d := allow(t, l, newcomer, 1)
				if !d.Allowed {
					t.Fatalf("request %d of the newcomer, each given back: refused; the overflow quota kept what was given back", i+1)
				}
				var err error
				if name == "refund" {
					err = l.Settle(ctx, newcomer, d, 0)
				} else {
					err = l.Settle(ctx, newcomer, d, d.Cost)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// A request too costly for a shadow policy listed first, but not for the enforced ones, is
// checked without that policy (its result is made up: denied for ever); decided on the overflow
// quota of a full memory store, its refund goes back there all the same: the decision's first
// result, the made-up one, hid that it was the overflow quota's, and the refund went to the
// identity's own state, which the store does not hold.
func TestMemoryStoreOverflowGivesBackBesideATooCostlyShadow(t *testing.T) {
	obs := &fullCounter{}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()), ratelimit.WithMaxKeys(64), ratelimit.WithObserver(obs.observer()))
	l := mustNew(t, store,
		ratelimit.Policy{Name: "trial", Limit: 1, Window: time.Hour, Shadow: true},
		ratelimit.Policy{Name: "rate", Limit: 4, Window: time.Hour})
	for i := 0; obs.overflows == 0; i++ {
		allow(t, l, "half-"+strconv.Itoa(i), 2) // half their limit: kept
	}
	newcomer := ""
	for i := 0; newcomer == ""; i++ {
		before, id := obs.overflows, "newcomer-"+strconv.Itoa(i)
		d := allow(t, l, id, 2)
		if obs.overflows > before {
			newcomer = id
		}
		if err := l.Settle(ctx, id, d, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		d := allow(t, l, newcomer, 2)
		if !d.Allowed {
			t.Fatalf("request %d of cost 2 of the newcomer, each refunded: refused; the refunds did not reach the overflow quota", i+1)
		}
		if err := l.Settle(ctx, newcomer, d, 0); err != nil {
			t.Fatal(err)
		}
	}
}
