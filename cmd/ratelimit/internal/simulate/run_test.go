package simulate_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/cmd/ratelimit/internal/simulate"
	"github.com/a7d3e0dd/ratelimit/internal/algo"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// traces runs sc through every algorithm over the memory store.
func traces(t *testing.T, sc simulate.Scenario) map[algorithms.Algorithm]simulate.Trace {
	t.Helper()
	trs, err := simulate.RunAll(context.Background(), sc, simulate.Memory)
	if err != nil {
		t.Fatal(err)
	}
	out := map[algorithms.Algorithm]simulate.Trace{}
	for _, tr := range trs {
		out[tr.Algorithm] = tr
	}
	return out
}

// TestRunRecordsEveryRequestAndSample: a trace holds one decision per arrival, at its time,
// and one sample every SampleEvery from 0 to the scenario's end.
func TestRunRecordsEveryRequestAndSample(t *testing.T) {
	for _, sc := range simulate.Scenarios() {
		for alg, tr := range traces(t, sc) {
			if len(tr.Requests) != len(sc.Arrivals) {
				t.Fatalf("%s, %s: %d decisions for %d arrivals", sc.Name, alg.Name(), len(tr.Requests), len(sc.Arrivals))
			}
			for i, r := range tr.Requests {
				if r.At != sc.Arrivals[i] {
					t.Fatalf("%s, %s: decision %d at %v, arrival at %v", sc.Name, alg.Name(), i, r.At, sc.Arrivals[i])
				}
			}
			if want := int(sc.Length/simulate.SampleEvery) + 1; len(tr.Samples) != want {
				t.Fatalf("%s, %s: %d samples, want %d", sc.Name, alg.Name(), len(tr.Samples), want)
			}
			atStart := int64(0) // admitted at 0: the first sample sees them
			for _, at := range tr.AdmittedAt() {
				if at == 0 {
					atStart++
				}
			}
			if first := tr.Samples[0]; first.At != 0 || first.Remaining != simulate.Limit-atStart {
				t.Errorf("%s, %s: first sample %+v, want a fresh policy at 0 (Remaining %d)", sc.Name, alg.Name(), first, simulate.Limit-atStart)
			}
		}
	}
}

// TestStateIsTheStoresOwn: the sampled state is what a limiter over a store reports, not a
// model of it: replaying a trace's admitted requests into a fresh store gives the same
// Remaining at every sample.
func TestStateIsTheStoresOwn(t *testing.T) {
	sc := simulate.Overload()
	for alg, tr := range traces(t, sc) {
		clock := &stepClock{}
		l, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), simulate.Policy(alg))
		if err != nil {
			t.Fatal(err)
		}
		admitted := tr.AdmittedAt()
		for _, s := range tr.Samples {
			for len(admitted) > 0 && admitted[0] <= s.At {
				clock.at = admitted[0]
				if d, err := l.Allow(context.Background(), "replay"); err != nil || !d.Allowed {
					t.Fatalf("%s: replaying the request admitted at %v: %+v, %v", alg.Name(), admitted[0], d, err)
				}
				admitted = admitted[1:]
			}
			clock.at = s.At
			d, err := l.AllowN(context.Background(), "replay", 0)
			if err != nil {
				t.Fatal(err)
			}
			if d.Remaining != s.Remaining {
				t.Fatalf("%s at %v: sampled Remaining %d, replayed %d", alg.Name(), s.At, s.Remaining, d.Remaining)
			}
		}
	}
}

// TestFixedWindowDoublesAcrossABoundary: the burst across a boundary gets twice the limit
// through the fixed window within one Window, and through none of the sliding algorithms.
func TestFixedWindowDoublesAcrossABoundary(t *testing.T) {
	trs := traces(t, simulate.BoundaryBurst())
	if got := simulate.MostWithin(trs[algorithms.FixedWindow{}].AdmittedAt(), simulate.Window); got != 2*simulate.Limit {
		t.Errorf("fixed window: at most %d admitted in one window, want %d", got, 2*simulate.Limit)
	}
	for _, alg := range []algorithms.Algorithm{algorithms.SlidingLog{}, algorithms.SlidingCounter{}} {
		if got := simulate.MostWithin(trs[alg].AdmittedAt(), simulate.Window); got > simulate.Limit {
			t.Errorf("%s: %d admitted in one window, want at most %d", alg.Name(), got, simulate.Limit)
		}
	}
}

// TestSlidingLogIsExact: in every scenario the sliding log admits at most Limit in any
// Window, and refuses nothing of the steady stream at the limit.
func TestSlidingLogIsExact(t *testing.T) {
	for _, sc := range simulate.Scenarios() {
		tr := traces(t, sc)[algorithms.SlidingLog{}]
		if got := simulate.MostWithin(tr.AdmittedAt(), simulate.Window); got > simulate.Limit {
			t.Errorf("%s: %d admitted in one window, want at most %d", sc.Name, got, simulate.Limit)
		}
	}
	if tr := traces(t, simulate.Steady())[algorithms.SlidingLog{}]; tr.Refused() != 0 {
		t.Errorf("steady stream at the limit: %d refused, want none", tr.Refused())
	}
}

// TestBucketsAreOneMeter: the token bucket, the leaky bucket (policing and shaping) and GCRA
// decide every request of every scenario alike, as their documentation says.
func TestBucketsAreOneMeter(t *testing.T) {
	allowed := func(tr simulate.Trace) []bool {
		var out []bool
		for _, r := range tr.Requests {
			out = append(out, r.Allowed)
		}
		return out
	}
	for _, sc := range simulate.Scenarios() {
		trs := traces(t, sc)
		want := allowed(trs[algorithms.GCRA{}])
		for _, alg := range []algorithms.Algorithm{algorithms.TokenBucket{}, algorithms.LeakyBucket{}, algorithms.LeakyBucket{Shaping: true}} {
			if got := allowed(trs[alg]); !slices.Equal(got, want) {
				t.Errorf("%s: %s decided otherwise than GCRA", sc.Name, alg.Name())
			}
		}
	}
}

// TestShapingReleasesAtTheRate: the shaping bucket releases what it admits one emission
// interval apart at most, whatever arrives, and nothing waits longer than Burst intervals.
func TestShapingReleasesAtTheRate(t *testing.T) {
	interval := simulate.Window / simulate.Limit
	for _, sc := range simulate.Scenarios() {
		tr := traces(t, sc)[algorithms.LeakyBucket{Shaping: true}]
		rel := tr.ReleasedAt()
		for i := 1; i < len(rel); i++ {
			if gap := rel[i] - rel[i-1]; gap < interval {
				t.Fatalf("%s: releases at %v and %v, %v apart, want at least %v", sc.Name, rel[i-1], rel[i], gap, interval)
			}
		}
		for _, r := range tr.Requests {
			if r.Delay > simulate.Burst*interval {
				t.Errorf("%s: a request at %v waits %v, more than %d intervals", sc.Name, r.At, r.Delay, simulate.Burst)
			}
		}
		if got := simulate.MostWithin(rel, simulate.Window); got > simulate.Limit+1 {
			t.Errorf("%s: %d released in one window, want at most %d", sc.Name, got, simulate.Limit+1)
		}
	}
}

// TestOverloadHeldToTheRate: under the 3× overload every algorithm admits at most what its
// policy allows over the overload's three windows: Limit per window, plus the burst for the
// buckets.
func TestOverloadHeldToTheRate(t *testing.T) {
	sc := simulate.Overload()
	windows := int(sc.Arrivals[len(sc.Arrivals)-1]/simulate.Window) + 1
	for alg, tr := range traces(t, sc) {
		most := windows * simulate.Limit
		if algo.Of(alg).UsesBurst() {
			most += simulate.Burst
		}
		if tr.Admitted() > most {
			t.Errorf("%s: %d admitted over %d windows, want at most %d", alg.Name(), tr.Admitted(), windows, most)
		}
		if tr.Refused() == 0 {
			t.Errorf("%s: nothing refused under a 3× overload", alg.Name())
		}
	}
}

// stepClock is a clock that stands where the test puts it: at, after fakeclock.T0.
type stepClock struct{ at time.Duration }

func (c *stepClock) Now() time.Time { return fakeclock.T0.Add(c.at) }

func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error { return ctx.Err() }
