package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/cost"
	"github.com/a7d3e0dd/ratelimit/internal/algo"

	"github.com/a7d3e0dd/ratelimit"
)

// Reserve and settle attacked (an adversarial review of issue 35): each test failed while the
// defect its comment names stood.

// A settle of a huge actual — a provider's usage that a compromised or buggy upstream reports,
// a handler that sums a length wrongly — is an overdraft: the identity must be refused after
// it, on every engine and algorithm. Charged as is, the arithmetic of a count or a TAT wraps
// (memory), or the charge is refused outright by the overdraw's check (Redis: 2^52 is its
// "huge"), and the quota is free again.
func TestSettleHugeActualStillRefuses(t *testing.T) {
	for _, actual := range []int64{1 << 53, 1 << 62, math.MaxInt64} {
		t.Run(strconv.FormatInt(actual, 10), func(t *testing.T) {
			forEachHoldable(t, time.Minute, func(t *testing.T, l *ratelimit.Limiter, key string, clock *fakeClock, alg algorithms.Algorithm) {
				d := reserve(t, l, key, 10)
				if !d.Allowed {
					t.Fatal("the first reservation denied")
				}
				if err := l.Settle(ctx, key, d, actual); err != nil {
					return // refusing a cost the arithmetic cannot hold is an answer too
				}
				clock.Advance(time.Second)
				if got := allow(t, l, key, 1); got.Allowed {
					t.Fatalf("after a settle of %d over a limit of 100, a request is admitted (Remaining %d)", actual, got.Remaining)
				}
			})
		})
	}
}

// countingStore is a wrapper of the kind the Store documentation invites (metrics, a cache, a
// circuit breaker of your own): it counts the checks it passes on, and declares Unwrap when
// unwrap is set.
type countingStore struct {
	ratelimit.Store
	checks atomic.Int64
}

func (s *countingStore) Check(ctx context.Context, key string, policies []ratelimit.Policy, cost int64, charge bool, out []ratelimit.PolicyResult) (time.Time, error) {
	s.checks.Add(1)
	return s.Store.Check(ctx, key, policies, cost, charge, out)
}

type unwrappingStore struct{ *countingStore }

func (s unwrappingStore) Unwrap() ratelimit.Store { return s.countingStore.Store }

// A wrapper that declares Unwrap, as the Store documentation asks, but not PassesHolds, is not
// passed over by a reservation, which would skip its Check (its metrics, its breaker, its
// cache): the holds of the store it wraps are not reached through it. Reserve refuses it (ErrBadRequest), and so
// does NewGuard with ChargeAfter, naming why.
func TestReserveOverAWrapperStore(t *testing.T) {
	inner := &countingStore{Store: ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))}
	l := mustNew(t, unwrappingStore{inner}, ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Minute})
	if _, err := l.Reserve(ctx, "k", 20); !errors.Is(err, ratelimit.ErrBadRequest) || !strings.Contains(err.Error(), "keeps no holds") {
		t.Errorf("Reserve over a wrapper: %v, want an ErrBadRequest saying the store keeps no holds", err)
	}
	if _, err := ratelimit.NewGuard(l, estimate20, ratelimit.ChargeAfter(cost.Reported)); err == nil || !strings.Contains(err.Error(), "ChargeAfter: ") {
		t.Errorf("NewGuard with ChargeAfter over a wrapper: %v, want it refused", err)
	}
	if n := inner.checks.Load(); n != 0 {
		t.Errorf("the wrapper's Check ran %d times", n)
	}
}

// passingStore is a wrapper that only adds to the store it wraps, and says so: PassesHolds.
type passingStore struct{ unwrappingStore }

func (passingStore) PassesHolds() bool { return true }

// A wrapper that declares PassesHolds lets reservations pass to the store it wraps.
func TestReserveOverAWrapperThatPassesHolds(t *testing.T) {
	inner := &countingStore{Store: ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))}
	l := mustNew(t, passingStore{unwrappingStore{inner}}, ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Minute})
	d := reserve(t, l, "k", 20)
	settle(t, l, "k", d, 30)
	if got := remaining(t, l, "k"); got != 70 {
		t.Errorf("%d left after a settle of 30 through the wrapper, want 70", got)
	}
}

// A wrapper that does not declare Unwrap keeps no holds: NewGuard refuses ChargeAfter over it
// (had it been accepted, every Reserve would fail with ErrBadRequest, and the guard, failing
// open, would let every request through unlimited).
func TestChargeAfterOverAStoreWithoutHoldsRefused(t *testing.T) {
	store := &countingStore{Store: ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))}
	l := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Minute})
	if _, err := ratelimit.NewGuard(l, estimate20, ratelimit.ChargeAfter(cost.Reported)); err == nil || !strings.Contains(err.Error(), "keeps no holds") {
		t.Fatalf("NewGuard with ChargeAfter over a store without holds: %v, want it refused", err)
	}
}

// A handler charged after its response that calls a provider through a Transport with
// ChargeAfter, its outgoing request made from the incoming one's context (as a handler does,
// to pass on its deadline), and follows both examples of docs/costs.md — the outgoing call
// reports the provider's usage on resp.Request.Context(), the handler reports it on its own
// r.Context() — charges its client twice: the Transport's meter takes the guard's as its outer
// (cost.NewContext), so the first report reaches the guard's meter too.
func TestTransportReportIsNotTheIncomingGuards(t *testing.T) {
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"usage":{"total_tokens":30}}`))
	}))
	defer provider.Close()
	upstream, _ := tokensLimiter(t, nil)
	client := &http.Client{Transport: &ratelimit.Transport{
		Limiter:     upstream,
		Key:         func(*http.Request) string { return "provider" },
		Cost:        func(*http.Request) int64 { return 20 },
		ChargeAfter: cost.Reported,
	}}
	l, _ := tokensLimiter(t, nil)
	h := ratelimit.Middleware(l, estimate20, ratelimit.ChargeAfter(cost.Reported))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, provider.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		cost.Report(resp.Request.Context(), 30) // the outgoing call's usage, for the Transport
		_ = resp.Body.Close()
		cost.Report(r.Context(), 30) // the same usage, for the handler's guard
	}))
	getAt(h, "")
	if got := remaining(t, upstream, "provider"); got != 70 {
		t.Errorf("the provider's limiter has %d left, want 70", got)
	}
	if got := remaining(t, l, "ip:192.0.2.1"); got != 70 {
		t.Errorf("the client's limiter has %d left after a request that used 30, want 70: the Transport's report reached the guard's meter too", got)
	}
}

// A Settle whose context had ended (a worker's job ended with its model call) asks nothing of
// the store and does not mark its reservation settled: the retry, on a live context, charges
// the usage (marked first, the retry was refused as a second Settle and the usage was free).
func TestSettleRetriedAfterItsContextEnded(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		clock.Set(t0)
		key := keyOf(t)
		l := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Hour, Algorithm: algorithms.FixedWindow{}})
		d := reserve(t, l, key, 20)
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		if err := l.Settle(canceled, key, d, 90); err == nil {
			t.Skip("a settle on a canceled context succeeded: nothing to retry")
		}
		if err := l.Settle(ctx, key, d, 90); err != nil {
			t.Errorf("the retry of a settle that failed: %v", err)
		}
		clock.Advance(6 * time.Minute)              // past the hold's lifetime (5 minutes), in the same hour
		settle(t, l, key, reserve(t, l, key, 1), 0) // gives back the holds that expired
		if got := remaining(t, l, key); got != 10 {
			t.Errorf("%d left of 100 after a request that used 90, want 10", got)
		}
	})
}

// Reports add up in an int64 that wraps: two large reports (a usage summed from chunks, a
// provider's bogus figure) make After.Reported negative, ChargeAfter returns it, and the guard
// keeps only the estimate charged.
func TestMeterReportsDoNotWrap(t *testing.T) {
	var m cost.Meter
	m.Report(math.MaxInt64)
	m.Report(math.MaxInt64)
	if got := m.After(http.StatusOK, 20).Reported; got < 0 {
		t.Fatalf("two reports of MaxInt64 add up to %d", got)
	}
}

// The same steps of reserves, settles (below and above the estimate, late ones, ones after a
// window's end), shadow policies and expiries, on the memory store and on each Redis engine,
// must leave the same numbers: a seeded walk compares every decision's Allowed, Remaining and
// Cost with the memory store's.
func TestAdversaryEnginesAgreeOnHolds(t *testing.T) {
	for _, alg := range holdable {
		t.Run(alg.Name(), func(t *testing.T) {
			policies := []ratelimit.Policy{
				{Name: "minute", Limit: 100, Window: time.Minute, Algorithm: alg},
				{Name: "second", Limit: 30, Window: 7 * time.Second, Algorithm: alg},
				{Name: "watch", Limit: 40, Window: 10 * time.Second, Algorithm: alg, Shadow: true},
			}
			walk := func(t *testing.T, e engine) []string {
				clock := newFakeClock()
				l := mustNew(t, e.store(t, ratelimit.WithClock(clock)), policies...)
				key := "walk:" + alg.Name()
				rng := rand.New(rand.NewPCG(1, 2))
				var open []ratelimit.Decision
				var log []string
				for step := range 300 {
					clock.Advance(time.Duration(rng.IntN(3_000_000)) * time.Microsecond)
					if len(open) > 0 && rng.IntN(2) == 0 {
						i := rng.IntN(len(open))
						d := open[i]
						open = append(open[:i], open[i+1:]...)
						actual := int64(rng.IntN(2*int(d.Cost) + 1))
						if err := l.Settle(ctx, key, d, actual); err != nil {
							t.Fatalf("step %d: Settle: %v", step, err)
						}
						continue
					}
					d, err := l.Reserve(ctx, key, int64(rng.IntN(25)))
					if err != nil {
						t.Fatalf("step %d: Reserve: %v", step, err)
					}
					log = append(log, fmt.Sprintf("step %d: allowed %v remaining %d cost %d", step, d.Allowed, d.Remaining, d.Cost))
					if d.Allowed && rng.IntN(8) != 0 { // one in eight is never settled: it expires
						open = append(open, d)
					}
				}
				return log
			}
			want := walk(t, engines[0])
			t.Logf("denied: %d of %d", strings.Count(strings.Join(want, "\n"), "allowed false"), len(want))
			for _, e := range engines[1:] {
				got := walk(t, e)
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("%s: %s; memory: %s", e.name, got[i], want[i])
						break
					}
				}
			}
		})
	}
}

// A memory store that is full decides new identities on its overflow quota, which keeps no
// holds, and settleHold charges no overdraft there: a client that fills the store with
// identities it has used more than half of (which the store does not evict; one a request,
// from a header it chooses) is then charged its estimate for whatever its requests cost —
// 20 for 10,000 here, request after request.
func TestFullMemoryStoreChargesTheOverdraft(t *testing.T) {
	clock := newFakeClock()
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithMaxKeys(64))
	l := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 1000, Window: time.Minute})
	for i := range 1000 { // the filler: an identity a request
		allow(t, l, "filler:"+strconv.Itoa(i), 600) // more than half used: never evicted
	}
	served := 0
	for i := range 20 {
		d := reserve(t, l, "greedy:"+strconv.Itoa(i%2), 20)
		if !d.Allowed {
			continue
		}
		served++
		settle(t, l, "greedy:"+strconv.Itoa(i%2), d, 10_000)
	}
	if served > 2 {
		t.Fatalf("%d requests that each cost 10,000 served against 1,000 a minute on a full store", served)
	}
}

// Limit and Burst stay out of a policy's tag, so two lists that differ only in their limits —
// a Resolver's tiers, which the docs ask to share Name, algorithm and Window so that a client
// changing tier keeps its count — share one record of holds. The memory store gives back the
// record's expired holds under the policies of the reserve that created it (heldSet.policies),
// whatever tier charged them: a "pro" hold of 5,000 given back at the "free" rate, 36 s a
// unit, moves the TAT back by 50 hours, and the client's quota is whole again. (Redis gives
// them back under the policies of the call that finds them.)
func TestExpiredHoldOfAnotherTierIsGivenBackAtItsRate(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		clock.Set(t0)
		key := keyOf(t)
		free := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Hour, Algorithm: algorithms.GCRA{}})
		pro := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 10_000, Window: time.Hour, Algorithm: algorithms.GCRA{}})
		reserve(t, free, key, 1)                  // its request still runs when the client upgrades
		if !reserve(t, pro, key, 5_000).Allowed { // never settled: its instance died
			t.Fatal("the pro reservation denied")
		}
		if !allow(t, pro, key, 4_000).Allowed {
			t.Fatal("the pro request denied")
		}
		clock.Advance(5*time.Minute + time.Second) // past both holds' lifetime
		d := reserve(t, pro, key, 1)               // gives the expired holds back
		// 10,000 − 4,000 charged − 1 held, with 5 minutes repaid (833): at most 6,833 left.
		if d.Remaining > 6_900 {
			t.Fatalf("Remaining %d after the holds expired, want at most 6,833: a hold was given back at another tier's rate", d.Remaining)
		}
	})
}

// The same record seen from Redis: holds.lua gives back the expired holds of a list's record
// under the policies of the call that finds them. A client that leaves a "pro" hold of 5,000
// unsettled and moves to "free" has it given back at the free rate by its next free call — 50
// hours of TAT for 30 minutes charged — and its free quota is whole again.
func TestExpiredHoldGivenBackAtItsOwnRate(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		clock.Set(t0)
		key := keyOf(t)
		free := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Hour, Algorithm: algorithms.GCRA{}})
		pro := mustNew(t, store, ratelimit.Policy{Name: "tokens", Limit: 10_000, Window: time.Hour, Algorithm: algorithms.GCRA{}})
		if !reserve(t, pro, key, 5_000).Allowed { // 30 minutes of TAT; never settled
			t.Fatal("the pro reservation denied")
		}
		if !allow(t, free, key, 40).Allowed { // downgraded: 50 + 40 of 100 used
			t.Fatal("the free request denied")
		}
		clock.Advance(5*time.Minute + time.Second) // past the hold's lifetime
		d := reserve(t, free, key, 1)              // gives the expired hold back
		// 100 − 40 − 1, with 5 minutes repaid (8) and the hold's 50 back: at most 68 left.
		if d.Remaining > 70 {
			t.Fatalf("Remaining %d of 100 after the pro hold expired, want at most 68: it was given back at the free rate", d.Remaining)
		}
	})
}

// An overdraft is repaid as its algorithm counts time: a TAT (GCRA, the buckets) carries it
// forward, and refuses the identity until time has repaid it all, windows later; a window
// algorithm (fixed window, sliding log, sliding counter) counts per window, and forgets it with
// the window it was charged in (docs/costs.md says so: choose a TAT where a repeated overdraft
// must be repaid). 100 a minute, reserved at 50, settled at 500: an overdraft of 450.
func TestAnOverdraftIsRepaidAsItsAlgorithmCounts(t *testing.T) {
	forEachHoldable(t, time.Minute, func(t *testing.T, l *ratelimit.Limiter, key string, clock *fakeClock, alg algorithms.Algorithm) {
		d := reserve(t, l, key, 50)
		if !d.Allowed {
			t.Fatal("the reservation denied")
		}
		settle(t, l, key, d, 500)
		clock.Advance(time.Second)
		if got := allow(t, l, key, 0); got.Allowed && got.Remaining > 0 {
			t.Fatalf("a second after an overdraft of 450, Remaining %d", got.Remaining)
		}
		clock.Advance(2 * time.Minute)
		tat := algo.Of(alg).UsesBurst()
		got := allow(t, l, key, 1)
		switch {
		case tat && got.Allowed:
			t.Errorf("two windows after an overdraft of 4.5 windows, a request is admitted (Remaining %d): a TAT carries it forward", got.Remaining)
		case !tat && !got.Allowed:
			t.Errorf("two windows after an overdraft, a window algorithm still refuses (Retry-After %v): it counts per window", got.RetryAfter)
		}
		clock.Advance(5 * time.Minute)
		if got := allow(t, l, key, 1); !got.Allowed {
			t.Errorf("seven windows after an overdraft of 4.5, still refused (Retry-After %v)", got.RetryAfter)
		}
	})
}
