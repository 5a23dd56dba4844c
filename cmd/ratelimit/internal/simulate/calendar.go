package simulate

import (
	"context"
	"fmt"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// CalendarScenario is one client's traffic under a calendar policy (Policy.Period): the
// pictures of calendar quotas, whose periods follow a zone's calendar and clock.
type CalendarScenario struct {
	// Name is the stem of the scenario's picture: "calendar-dst" draws calendar-dst.svg.
	Name string
	// Title heads the picture.
	Title string
	// Traffic says in one line what arrives when.
	Traffic string
	// Rate is the policy in the text form ParsePolicy reads: "3/day@America/New_York".
	Rate string
	// From and To are the instants the picture shows; the limiter is made at From.
	From, To time.Time
	// Arrivals are the times requests arrive, since From, in order.
	Arrivals []time.Duration
	// SampleEvery is how often the state is read.
	SampleEvery time.Duration
	// Bucket is the width of a bar: requests are counted per Bucket of elapsed time.
	Bucket time.Duration
	// Used draws, in a row of its own, what the period has used (Limit less Remaining) in
	// place of the Remaining line on the bars.
	Used bool
	// Ticks are the instants the time axis labels, each with its label.
	Ticks func() []Tick
	// Axis is the title of the time axis.
	Axis string
	// Period names a period on the picture, from its bounds ("Sun 8 Mar: 23 hours"), and
	// reports whether it stands out (a day that is not 24 hours long).
	Period func(start, end time.Time) (name string, standsOut bool)
}

// Tick is a labelled instant of a time axis.
type Tick struct {
	At    time.Time
	Label string
	// Day, when not "", is written under Label.
	Day string
}

// Length is the time the picture shows.
func (sc CalendarScenario) Length() time.Duration { return sc.To.Sub(sc.From) }

// Policy returns the scenario's policy, parsed from its Rate.
func (sc CalendarScenario) Policy() (ratelimit.Policy, error) {
	return ratelimit.ParsePolicy(sc.Rate)
}

// CalendarTrace is what the limiter made of a calendar scenario's traffic, and the periods
// its policy cut the picture's time into.
type CalendarTrace struct {
	Trace
	// Limit is the policy's.
	Limit int64
	// Periods are the periods that meet [From, To), as the policy's Period bounds them, each
	// since From.
	Periods []Span
}

// Span is a period: [Start, End) since the start of a picture.
type Span struct{ Start, End time.Duration }

// CalendarScenarios returns the calendar pictures' traffic, one picture each.
func CalendarScenarios() ([]CalendarScenario, error) {
	dst, err := CalendarDST()
	if err != nil {
		return nil, err
	}
	return []CalendarScenario{dst, CalendarBilling()}, nil
}

// CalendarDST is 3 a day in New York across the clock change of 2026-03-08 (02:00 becomes
// 03:00, so that day is 23 hours long): one request every hour, at half past, from Saturday 7
// to Tuesday 10 March. Each day admits its first three.
func CalendarDST() (CalendarScenario, error) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		return CalendarScenario{}, fmt.Errorf("the calendar-dst picture: %w", err)
	}
	from, to := time.Date(2026, 3, 7, 0, 0, 0, 0, ny), time.Date(2026, 3, 10, 0, 0, 0, 0, ny)
	return CalendarScenario{
		Name:        "calendar-dst",
		Title:       "A daily quota across the change to daylight saving time",
		Traffic:     "One request every hour, at half past, from Saturday 7 to Tuesday 10 March 2026 in New York.",
		Rate:        "3/day@America/New_York",
		From:        from,
		To:          to,
		Arrivals:    every(30*time.Minute, time.Hour, int(to.Sub(from)/time.Hour)),
		SampleEvery: 15 * time.Minute,
		Bucket:      time.Hour,
		Ticks: func() []Tick {
			var ticks []Tick
			for d := from; !d.After(to); d = time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, ny) {
				for h := 0; h < 24; h += 6 {
					t := time.Date(d.Year(), d.Month(), d.Day(), h, 0, 0, 0, ny)
					if t.After(to) {
						break
					}
					tick := Tick{At: t, Label: t.Format("15:04")}
					if h == 0 {
						tick.Day = t.Format("Mon 2 Jan")
					}
					ticks = append(ticks, tick)
				}
			}
			return ticks
		},
		Axis: "New York's clock (the axis is elapsed time, so the day of 23 hours is shorter)",
		Period: func(start, end time.Time) (string, bool) {
			h := end.Sub(start)
			return fmt.Sprintf("%s: %d hours", start.Format("Mon 2 Jan"), int(h/time.Hour)), h != 24*time.Hour
		},
	}, nil
}

// CalendarBilling is a billing month of 3000 anchored on January 31 (UTC): its cycles start
// again on February 28, March 31 and April 30, the anchor's day or the month's last. The client
// sends 100 requests a day, evenly, from the anchor to May 31: a cycle of 28 or 30 days has
// room for them all, one of 31 refuses its last day's.
func CalendarBilling() CalendarScenario {
	from, to := time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 31, 0, 0, 0, 0, time.UTC)
	const perDay = 100
	step := 24 * time.Hour / perDay
	return CalendarScenario{
		Name:        "calendar-billing",
		Title:       "A billing month anchored on January 31",
		Traffic:     "100 requests a day, one every 14 min 24 s, from Saturday 31 January to Sunday 31 May 2026 (UTC).",
		Rate:        "3000/month@UTC~2026-01-31",
		From:        from,
		To:          to,
		Arrivals:    every(step/2, step, int(to.Sub(from)/step)),
		SampleEvery: 6 * time.Hour,
		Bucket:      24 * time.Hour,
		Used:        true,
		Ticks: func() []Tick {
			var ticks []Tick
			for d := from; !d.After(to); d = d.AddDate(0, 0, 1) {
				// The 15th, and each month's last day, where the cycles start.
				if d.Day() == 15 || d.AddDate(0, 0, 1).Day() == 1 {
					ticks = append(ticks, Tick{At: d, Label: d.Format("2 Jan")})
				}
			}
			return ticks
		},
		Axis: "the date (UTC), at 00:00",
		Period: func(start, end time.Time) (string, bool) {
			return fmt.Sprintf("%d days", int(end.Sub(start)/(24*time.Hour))), false
		},
	}
}

// RunCalendar drives sc's traffic through a limiter of sc's policy over a store from
// newStore, on a fake clock that starts at sc.From, and reads the state every
// sc.SampleEvery, from From to To included; a sample at the time of a request sees it.
func RunCalendar(ctx context.Context, sc CalendarScenario, newStore NewStore) (CalendarTrace, error) {
	p, err := sc.Policy()
	if err != nil {
		return CalendarTrace{}, err
	}
	clock := &stepClock{now: sc.From}
	limiter, err := ratelimit.New(newStore(clock), p)
	if err != nil {
		return CalendarTrace{}, err
	}
	tr := CalendarTrace{Trace: Trace{Algorithm: algorithms.FixedWindow{}}, Limit: p.Limit}
	next := 0
	for at := time.Duration(0); at <= sc.Length(); at += sc.SampleEvery {
		for ; next < len(sc.Arrivals) && sc.Arrivals[next] <= at; next++ {
			arrive := sc.Arrivals[next]
			clock.set(sc.From.Add(arrive))
			d, err := limiter.Allow(ctx, key)
			if err != nil {
				return CalendarTrace{}, fmt.Errorf("%s at %v: %w", sc.Name, arrive, err)
			}
			tr.Requests = append(tr.Requests, Request{At: arrive, Allowed: d.Allowed, Delay: d.Delay})
		}
		clock.set(sc.From.Add(at))
		d, err := limiter.AllowN(ctx, key, 0)
		if err != nil {
			return CalendarTrace{}, fmt.Errorf("%s, state at %v: %w", sc.Name, at, err)
		}
		tr.Samples = append(tr.Samples, Sample{At: at, Remaining: d.Remaining})
	}
	for t := sc.From; t.Before(sc.To); {
		start, end := p.Period.Bounds(t)
		tr.Periods = append(tr.Periods, Span{Start: start.Sub(sc.From), End: end.Sub(sc.From)})
		t = end
	}
	return tr, nil
}

// AdmittedIn returns how many requests the limiter admitted in each of the trace's periods.
func (tr CalendarTrace) AdmittedIn() []int {
	n := make([]int, len(tr.Periods))
	for _, at := range tr.AdmittedAt() {
		for i, s := range tr.Periods {
			if at >= s.Start && at < s.End {
				n[i]++
			}
		}
	}
	return n
}
