package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
)

// The subjects of issue 35's targets (item 7): Limiter.Reserve and Limiter.Settle beside a
// plain check of the same policies (gcra1 and gcra3, as the rows of 1 have them), and a
// Reserve on an identity that 100 holds weigh on. held is the policy of those: 100 a second
// as gcra1, over a minute, so that 100 holds of 1 fit in its capacity and outlive the round.
var held = []ratelimit.Policy{{Limit: 6000, Window: time.Minute}}

// holdEstimate is what every measured Reserve holds: Settle then charges it (at the estimate),
// one less (giving back) or one more (an overdraft).
const holdEstimate = 2

// holdsTable is the table of issue 35's targets, written to a section of its own in the
// results file ("bench-holds"), so that `-only holds` can take it again without the rest.
var holdsTable = []section{
	{"35 Reserve and Settle beside a check of the same policies: Redis server time per call (INFO commandstats: usec / calls), calls from one goroutine, the subjects of each group taken in alternate slices", []row{
		{"GCRA check, 1 policy (floor)", "srvh.c1", "µs", "", nil},
		{"Reserve, 1 policy", "srvh.r1", "µs", "srvh.c1", ratioAtMost(1.25)},
		{"Settle of a Reserve, 1 policy, at its estimate", "srvh.s1", "µs", "srvh.c1", nil},
		{"Settle, 1 policy, under its estimate (gives back)", "srvh.s1u", "µs", "srvh.c1", nil},
		{"Settle, 1 policy, over its estimate (an overdraft)", "srvh.s1o", "µs", "srvh.c1", nil},
		{"GCRA check, 3 policies (10/s, 100/min, 1000/h) (floor)", "srvh.c3", "µs", "", nil},
		{"Reserve, 3 policies", "srvh.r3", "µs", "srvh.c3", ratioAtMost(1.25)},
		{"Settle, 3 policies, under its estimate (gives back)", "srvh.s3u", "µs", "srvh.c3", nil},
	}},
	{"35 round trips to Redis per call, one goroutine (a go-redis hook: commands and pipelines sent)", []row{
		{"Reserve, 1 policy", "trips.reserve", "calls", "", nil},
		{"Settle, 1 policy, under its estimate", "trips.settle", "calls", "", &goal{"=", 1, false}},
	}},
	{"35 100 holds on one identity, none settled (a policy of 6000/min): Redis server time per call, one goroutine, in alternate slices", []row{
		{"GCRA check, no holds (floor)", "srvh.c0", "µs", "", nil},
		{"GCRA check, 100 holds", "srvh.c100", "µs", "srvh.c0", ratioAtMost(2)},
		{"Reserve, no holds", "srvh.r0", "µs", "srvh.c0", nil},
		{"Reserve, 100 holds", "srvh.r100", "µs", "srvh.c0", nil},
		{"Reserve, 100 holds, beside Reserve with none", "srvh.r100", "µs", "srvh.r0", ratioAtMost(2)},
	}},
}

// holdNames are the subjects of holdsTable whose commands -v breaks down.
var holdNames = []string{"c1", "r1", "s1", "s1u", "s1o", "c3", "r3", "s3u", "c0", "r0", "r100"}

const (
	holdSlices = 10  // slices of each subject per round, as calendarSlices
	holdSlice  = 500 // identities of a slice of the groups of gcra1 and gcra3
	heldKeys   = 200 // identities of each kind (100 holds, none) of the last group
	holdsOn    = 100 // the holds each of those has
	tripRuns   = 200 // calls of each round-trip figure
)

// holdSubject is one operation of holdsTable, called once on each identity of a slice. before
// and after run around each slice, outside the measure (nil: nothing).
type holdSubject struct {
	name          string
	call          caller
	before, after func(ctx context.Context, keys []string) error
}

// reservations holds the decisions of Reserve calls until they are settled.
type reservations struct {
	mu sync.Mutex
	m  map[string][]ratelimit.Decision
}

func newReservations() *reservations {
	return &reservations{m: map[string][]ratelimit.Decision{}}
}

// reserving returns a caller that reserves holdEstimate on l and keeps the decision in r.
func (r *reservations) reserving(l *ratelimit.Limiter) caller {
	return func(ctx context.Context, key string) error {
		d, err := l.Reserve(ctx, key, holdEstimate)
		if err == nil && !d.Allowed {
			err = fmt.Errorf("reserve of %s denied: the benchmark's limits are too low for its load", key)
		}
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.m[key] = append(r.m[key], d)
		r.mu.Unlock()
		return nil
	}
}

// settling returns a caller that settles on l the last decision r holds for the key, charging
// its estimate plus delta.
func (r *reservations) settling(l *ratelimit.Limiter, delta int64) caller {
	return func(ctx context.Context, key string) error {
		r.mu.Lock()
		ds := r.m[key]
		if len(ds) == 0 {
			r.mu.Unlock()
			return fmt.Errorf("settle of %s: no reservation to settle", key)
		}
		d := ds[len(ds)-1]
		r.m[key] = ds[:len(ds)-1]
		r.mu.Unlock()
		return l.Settle(ctx, key, d, d.Cost+delta)
	}
}

// onEach returns fn as a before or after of a slice: fn on each of its identities.
func onEach(fn caller) func(ctx context.Context, keys []string) error {
	return func(ctx context.Context, keys []string) error { return each(ctx, fn, keys, 1) }
}

// holdsFigures takes the figures of holdsTable, each group over limiters of its own with keys
// of the round's.
func (e *env) holdsFigures(ctx context.Context, r int, f figures) error {
	if len(e.keys) < 2*heldKeys {
		return fmt.Errorf("-keys %d: the figures of holds need at least %d identities", len(e.keys), 2*heldKeys)
	}
	prefix := fmt.Sprintf("bt%d:h", r)
	lims := map[string]*ratelimit.Limiter{}
	for name, policies := range map[string][]ratelimit.Policy{"c1": gcra1, "r1": gcra1, "s1": gcra1, "c3": gcra3, "r3": gcra3, "s3": gcra3, "held": held} {
		l, err := limiter(e.client, prefix+name+":", policies)
		if err != nil {
			return err
		}
		lims[name] = l
	}
	// A Reserve, its holds settled at their estimate after its slice; a Settle, of holds taken
	// before its slice. Each limiter's reservations apart.
	reserveThen := func(l *ratelimit.Limiter) (caller, func(context.Context, []string) error) {
		res := newReservations()
		return res.reserving(l), onEach(res.settling(l, 0))
	}
	settleOf := func(l *ratelimit.Limiter, delta int64) (caller, func(context.Context, []string) error) {
		res := newReservations()
		return res.settling(l, delta), onEach(res.reserving(l))
	}
	r1, settled1 := reserveThen(lims["r1"])
	one := []holdSubject{{name: "c1", call: check(lims["c1"])}, {name: "r1", call: r1, after: settled1}}
	for _, s := range []struct {
		name  string
		delta int64
	}{{"s1", 0}, {"s1u", -1}, {"s1o", 1}} {
		call, reserved := settleOf(lims["s1"], s.delta)
		one = append(one, holdSubject{name: s.name, call: call, before: reserved})
	}
	r3, settled3 := reserveThen(lims["r3"])
	s3, reserved3 := settleOf(lims["s3"], -1)
	three := []holdSubject{
		{name: "c3", call: check(lims["c3"])},
		{name: "r3", call: r3, after: settled3},
		{name: "s3u", call: s3, before: reserved3},
	}
	for _, g := range [][]holdSubject{one, three} {
		if err := e.rotate(ctx, g, e.keys, holdSlice, r, f); err != nil {
			return err
		}
	}
	// Reserve fills held's identities with 100 holds each before the group: they last a
	// minute (held's window), longer than the group takes.
	hl := lims["held"]
	heavy, clear := e.keys[:heldKeys], e.keys[heldKeys:2*heldKeys]
	var fill []string
	for range holdsOn {
		fill = append(fill, heavy...)
	}
	standing := newReservations()
	if err := each(ctx, standing.reserving(hl), fill, e.s.goroutines); err != nil {
		return fmt.Errorf("100 holds: %w", err)
	}
	measured := newReservations()
	many := []holdSubject{
		{name: "c0", call: check(hl)},
		{name: "c100", call: check(hl)},
		{name: "r0", call: measured.reserving(hl), after: onEach(measured.settling(hl, 0))},
		{name: "r100", call: measured.reserving(hl), after: onEach(measured.settling(hl, 0))},
	}
	// c0 and r0 on identities without holds, c100 and r100 on those with 100.
	if err := e.rotateOn(ctx, many, func(s holdSubject) []string {
		if s.name == "c100" || s.name == "r100" {
			return heavy
		}
		return clear
	}, r, f); err != nil {
		return err
	}
	if err := e.roundTrips(ctx, r, f); err != nil {
		return fmt.Errorf("round trips: %w", err)
	}
	return nil
}

// rotate takes the Redis time per call of each subject over holdSlices slices of size of keys
// (the next ones each slice, cycling), from one goroutine, in turns whose order alternates (a b
// c, c b a, a b c …), so that a moving load weighs on every subject alike; r shifts the first
// slice from one round to the next.
func (e *env) rotate(ctx context.Context, subjects []holdSubject, keys []string, size, r int, f figures) error {
	next := r * size * len(subjects)
	return e.rotateOn(ctx, subjects, func(holdSubject) []string {
		slice := make([]string, size)
		for i := range slice {
			slice[i] = keys[next%len(keys)]
			next++
		}
		return slice
	}, r, f)
}

// rotateOn is rotate, each slice of s on the identities slice(s).
func (e *env) rotateOn(ctx context.Context, subjects []holdSubject, slice func(holdSubject) []string, r int, f figures) error {
	usec, calls := map[string]int64{}, map[string]int64{}
	sums := map[string]commandStats{}
	for turn := range holdSlices {
		order := slices.Clone(subjects)
		if (turn+r)%2 == 1 {
			slices.Reverse(order)
		}
		for _, s := range order {
			keys := slice(s)
			if s.before != nil {
				if err := s.before(ctx, keys); err != nil {
					return fmt.Errorf("%s: before: %w", s.name, err)
				}
			}
			stats, err := e.serverTime(ctx, func() error { return each(ctx, s.call, keys, 1) })
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			if s.after != nil {
				if err := s.after(ctx, keys); err != nil {
					return fmt.Errorf("%s: after: %w", s.name, err)
				}
			}
			c, ok := stats["fcall"]
			if !ok || c.Calls == 0 {
				return fmt.Errorf("%s: no fcall in INFO commandstats", s.name)
			}
			usec[s.name] += c.Usec
			calls[s.name] += int64(len(keys))
			sum := sums[s.name]
			if sum == nil {
				sum = commandStats{}
				sums[s.name] = sum
			}
			for cmd, c := range stats {
				t := sum[cmd]
				t.Calls += c.Calls
				t.Usec += c.Usec
				sum[cmd] = t
			}
		}
	}
	for _, s := range subjects {
		f["srvh."+s.name] = float64(usec[s.name]) / float64(calls[s.name])
		e.breakdown[s.name] = sums[s.name]
	}
	return nil
}

// tripCounter is a go-redis hook that counts the round trips a client makes: each command
// sent alone, and each pipeline.
type tripCounter struct{ n atomic.Int64 }

func (t *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (t *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t.n.Add(1)
		return next(ctx, cmd)
	}
}

func (t *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		t.n.Add(1)
		return next(ctx, cmds)
	}
}

// roundTrips takes the round trips per Reserve and per Settle (under its estimate, which
// gives back and announces it) of gcra1 from one goroutine, over a client of their own that
// counts them, after a warm-up that loads the library.
func (e *env) roundTrips(ctx context.Context, r int, f figures) error {
	var trips tripCounter
	client := redis.NewClient(&redis.Options{Addr: e.client.Options().Addr, PoolSize: 1, ContextTimeoutEnabled: true})
	client.AddHook(&trips)
	defer func() { _ = client.Close() }()
	l, err := limiter(client, fmt.Sprintf("bt%d:trips:", r), gcra1)
	if err != nil {
		return err
	}
	res := newReservations()
	reserve, settleCall := res.reserving(l), res.settling(l, -1)
	keys := e.keys[:tripRuns]
	if err := onEach(reserve)(ctx, keys[:10]); err != nil {
		return err
	}
	if err := onEach(settleCall)(ctx, keys[:10]); err != nil {
		return err
	}
	for _, s := range []struct {
		figure string
		call   caller
	}{{"trips.reserve", reserve}, {"trips.settle", settleCall}} {
		before := trips.n.Load()
		if err := each(ctx, s.call, keys, 1); err != nil {
			return err
		}
		f[s.figure] = float64(trips.n.Load()-before) / float64(len(keys))
	}
	return nil
}
