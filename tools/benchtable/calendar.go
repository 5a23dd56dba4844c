package main

import (
	"context"
	"fmt"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/calendar"
)

// The subjects of issue 36's target, "a calendar policy costs no more Redis time than a fixed
// window of the same count + 15 %": one policy of 1000 a day in UTC (counted by FixedWindow's
// calendar model), and its floor, a fixed window of 1000 per 24 h. Both are one key per
// identity, read and written once per check; what the calendar adds is the period's start and
// length in the call's arguments and its name in the key.
var (
	calendarDay = []ratelimit.Policy{{Limit: 1000, Period: &calendar.Period{Unit: calendar.Day, Zone: time.UTC}}}
	fixedDay    = []ratelimit.Policy{{Limit: 1000, Window: 24 * time.Hour, Algorithm: algorithms.FixedWindow{}}}
)

// calendarTable is the table of issue 36's target, written to a section of its own in the
// results file ("calendar"), so that `-only calendar` can take it again without the rest.
var calendarTable = []section{
	{"36 a calendar policy beside a fixed window of the same count: Redis server time per check (INFO commandstats: usec / checks), the two taken in alternate slices", []row{
		{"FixedWindow check, 1 policy of 1000 per 24 h, calls from one goroutine (floor)", "srvi.fw1", "µs", "", nil},
		{"calendar check, 1 policy of 1000/day@UTC, calls from one goroutine", "srvi.cal1", "µs", "srvi.fw1", ratioAtMost(1.15)},
		{"FixedWindow check, 1 policy of 1000 per 24 h, calls from 64 goroutines (floor)", "srv64i.fw1", "µs", "", nil},
		// From 64 goroutines the store merges checks, several to a call, as the scheduler
		// happens to gather them: the time per check moves with that, more than with the
		// policy, so the target is on one goroutine's.
		{"calendar check, 1 policy of 1000/day@UTC, calls from 64 goroutines", "srv64i.cal1", "µs", "srv64i.fw1", nil},
	}},
	{"36 the same two checks: what else they cost (each taken in a phase of its own, as in 1 to 4)", []row{
		{"FixedWindow check: p50 latency, one goroutine (floor)", "lat.fw1", "µs", "", nil},
		{"calendar check: p50 latency, one goroutine", "lat.cal1", "µs", "lat.fw1", nil},
		{"FixedWindow check: throughput, 64 goroutines (floor)", "tput.fw1", "/s", "", nil},
		{"calendar check: throughput, 64 goroutines", "tput.cal1", "/s", "tput.fw1", nil},
		{"FixedWindow check: client allocations per call (floor)", "allocs.fw1", "allocs", "", nil},
		{"calendar check: client allocations per call", "allocs.cal1", "allocs", "allocs.fw1", nil},
	}},
}

// calendarSlices is how many slices of each check the Redis time of calendarTable is taken
// over, in each round, from one goroutine and again from 64: the two checks alternate (fixed
// window, calendar, calendar, fixed window, …), so that a machine whose load moves (a shared
// one) weighs on both alike. Each slice is a tenth of -d.
const calendarSlices = 10

// calendarFigures takes the figures of calendarTable: the fixed window and the calendar
// policy, one after the other, each over a limiter of its own with keys of the round's.
func (e *env) calendarFigures(ctx context.Context, r int, f figures) error {
	prefix := fmt.Sprintf("bt%d:", r)
	fixed, err := limiter(e.client, prefix+"fw:", fixedDay)
	if err != nil {
		return err
	}
	daily, err := limiter(e.client, prefix+"cal:", calendarDay)
	if err != nil {
		return err
	}
	subjects := []subject{{"fw1", "fcall", check(fixed)}, {"cal1", "fcall", check(daily)}}
	if r%2 == 1 {
		// The two are this close, so the order is no bias: every other round takes the
		// calendar policy first (the server has the other's keys in memory when it measures
		// the second).
		subjects[0], subjects[1] = subjects[1], subjects[0]
	}
	for _, s := range subjects {
		if err := e.measure(ctx, s, f); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	for _, g := range []struct {
		figure     string
		goroutines int
	}{{"srvi", 1}, {"srv64i", e.s.goroutines}} {
		a, b, err := e.alternate(ctx, subjects[0], subjects[1], g.goroutines)
		if err != nil {
			return fmt.Errorf("%s: %w", g.figure, err)
		}
		f[g.figure+"."+subjects[0].name], f[g.figure+"."+subjects[1].name] = a, b
	}
	return nil
}

// alternate returns the server's microseconds per check of a and of b (their command's time
// over their checks), taken from the given number of goroutines in calendarSlices slices of
// each, in the order a b b a a b …
func (e *env) alternate(ctx context.Context, a, b subject, goroutines int) (float64, float64, error) {
	var usec, checks [2]int64
	for i := range 2 * calendarSlices {
		j := (i + 1) / 2 % 2 // 0 1 1 0 0 1 1 …
		s := []subject{a, b}[j]
		var n int64
		stats, err := e.serverTime(ctx, func() (err error) {
			_, n, err = rateN(ctx, s.call, e.keys, goroutines, e.s.phase/10)
			return err
		})
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", s.name, err)
		}
		c, ok := stats[s.command]
		if !ok || c.Calls == 0 || n == 0 {
			return 0, 0, fmt.Errorf("%s: no %s in INFO commandstats", s.name, s.command)
		}
		usec[j] += c.Usec
		checks[j] += n
	}
	return float64(usec[0]) / float64(checks[0]), float64(usec[1]) / float64(checks[1]), nil
}
