// Package simulate drives every algorithm with the same traffic, on a fake clock and through
// a real store, and draws what each one did as an SVG chart: the pictures in docs/pictures,
// which `go run ./cmd/ratelimit simulate -out docs/pictures` writes and a test keeps current.
//
// Every figure a picture shows comes from the limiter: admitted and refused from the
// decisions, the state from a cost-0 check at each sample time, the release times of the
// shaping bucket from each decision's Delay. Nothing is modelled here. The calendar pictures
// (calendar.go) drive one calendar policy the same way, and take its periods from its Period.
package simulate

import (
	"context"
	"fmt"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// The one policy every algorithm runs under: Limit per Window, and a burst of Burst where the
// algorithm has one.
const (
	Limit  = 10
	Window = time.Second
	Burst  = 10
)

// SampleEvery is how often the state is read.
const SampleEvery = 10 * time.Millisecond

// key is the one client of every scenario.
const key = "client"

// Algorithms returns every registered rate-limiting algorithm, in the order package
// algorithms lists them: not the in-flight limit, which bounds requests at once, not a rate.
func Algorithms() []algorithms.Algorithm {
	var out []algorithms.Algorithm
	for _, a := range algorithms.All() {
		if _, inFlight := a.(algorithms.InFlight); !inFlight {
			out = append(out, a)
		}
	}
	return out
}

// Policy returns the policy alg runs under.
func Policy(alg algorithms.Algorithm) ratelimit.Policy {
	return ratelimit.Policy{Limit: Limit, Window: Window, Burst: Burst, Algorithm: alg}
}

// Request is one request of a scenario and the limiter's decision on it.
type Request struct {
	// At is when it arrived, since the start.
	At time.Duration
	// Allowed is the decision.
	Allowed bool
	// Delay is how long an admitted request waits for its slot (shaping); 0 otherwise.
	Delay time.Duration
}

// Sample is the state of the policy at one time: the Remaining of a cost-0 check, which
// charges nothing.
type Sample struct {
	At        time.Duration
	Remaining int64
}

// Trace is what one algorithm made of one scenario's traffic.
type Trace struct {
	Algorithm algorithms.Algorithm
	Requests  []Request
	Samples   []Sample
}

// NewStore makes the store of one run, on the run's clock.
type NewStore func(clock ratelimit.Clock) ratelimit.Store

// Memory makes a memory store: the store of the checked-in pictures.
func Memory(clock ratelimit.Clock) ratelimit.Store {
	return ratelimit.NewMemoryStore(ratelimit.WithClock(clock))
}

// Run drives sc's traffic through a limiter of alg's [Policy] over a store from newStore, on a
// fake clock standing at a whole hour (so windows start at 0), and reads the state every
// [SampleEvery], from 0 to sc.Length included. A request and a sample at the same time: the
// sample sees the request.
func Run(ctx context.Context, sc Scenario, alg algorithms.Algorithm, newStore NewStore) (Trace, error) {
	clock := &stepClock{now: t0}
	limiter, err := ratelimit.New(newStore(clock), Policy(alg))
	if err != nil {
		return Trace{}, err
	}
	tr := Trace{Algorithm: alg}
	next := 0 // the next arrival
	for at := time.Duration(0); at <= sc.Length; at += SampleEvery {
		for ; next < len(sc.Arrivals) && sc.Arrivals[next] <= at; next++ {
			arrive := sc.Arrivals[next]
			clock.set(t0.Add(arrive))
			d, err := limiter.Allow(ctx, key)
			if err != nil {
				return Trace{}, fmt.Errorf("%s, %s at %v: %w", sc.Name, alg.Name(), arrive, err)
			}
			tr.Requests = append(tr.Requests, Request{At: arrive, Allowed: d.Allowed, Delay: d.Delay})
		}
		clock.set(t0.Add(at))
		d, err := limiter.AllowN(ctx, key, 0)
		if err != nil {
			return Trace{}, fmt.Errorf("%s, %s, state at %v: %w", sc.Name, alg.Name(), at, err)
		}
		tr.Samples = append(tr.Samples, Sample{At: at, Remaining: d.Remaining})
	}
	return tr, nil
}

// RunAll runs sc through every algorithm, each over a store of its own.
func RunAll(ctx context.Context, sc Scenario, newStore NewStore) ([]Trace, error) {
	var traces []Trace
	for _, alg := range Algorithms() {
		tr, err := Run(ctx, sc, alg, newStore)
		if err != nil {
			return nil, err
		}
		traces = append(traces, tr)
	}
	return traces, nil
}

// t0 is where a run starts its clock: a whole hour, so every window starts at 0.
var t0 = time.Unix(1_700_000_000-1_700_000_000%3600, 0)

// stepClock is the clock of one run: it moves only when the run sets it, and a run is one
// goroutine, so it needs no lock.
type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time  { return c.now }
func (c *stepClock) set(t time.Time) { c.now = t }
func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	c.now = c.now.Add(d) // a shaping wait is the run's to model, not to spend
	return ctx.Err()
}
