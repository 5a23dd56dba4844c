// Package calendar computes the periods of calendar quotas: a day, a week, a month or a year
// in a named time zone, or a billing cycle that starts again at an anchor's day and time each
// day, week, month or year. It answers, for any instant, the period that holds it (Bounds),
// a number that identifies the period (Index) and the period's name for a key (Tag).
//
// Periods are civil: a day starts at local midnight and a month on the 1st, however long
// that makes them in seconds (23 or 25 hours on the day a clock changes, 28 to 31 days in a
// month). Where a start does not exist on the local clock (a zone that sets its clock forward
// at midnight has no midnight that day), the period starts at the first instant after it, the
// moment the clock jumps; where it happens twice (a clock set back over it), at the first.
//
// Nothing here reads the host's zone (time.Local): every answer depends only on the instant
// and the Period, so two hosts in different zones agree. They also need the same time zone
// database: Go reads the host's (or the one embedded by importing time/tzdata), and a zone
// whose rules changed answers by the rules each host has.
package calendar

import (
	"fmt"
	"strings"
	"time"
)

// Unit is the length of a period on the calendar.
type Unit int

// The units. The zero Unit is none: a Period needs one.
const (
	Day   Unit = iota + 1 // from a local midnight to the next
	Week                  // seven days from a midnight of the week's first day
	Month                 // from a 1st, 00:00 local, to the next month's
	Year                  // from January 1, 00:00 local, to the next
)

// String returns the unit's name as the text form writes it: "day", "week", "month",
// "year"; another value is "Unit(n)".
func (u Unit) String() string {
	switch u {
	case Day:
		return "day"
	case Week:
		return "week"
	case Month:
		return "month"
	case Year:
		return "year"
	}
	return fmt.Sprintf("Unit(%d)", int(u))
}

// MaxEvery is the most units a period may span (Period.Every).
const MaxEvery = 1000

// Period is a way of cutting time into calendar periods. A Period is a value: it holds no
// state, and its methods are safe for concurrent use. Its methods expect a Period that
// Validate accepts; given another they answer without failing, reading a nil Zone as UTC, an
// unknown Unit as Day, an Every out of range as 1 and a WeekStart out of range modulo 7.
type Period struct {
	// Unit is the period's length on the calendar.
	Unit Unit
	// Every is how many units a period spans: 2 with Week is a fortnight; 0 is 1. Calendar
	// periods of several units are counted from 1970-01-01: days from that day, weeks from
	// the first WeekStart on or after it, months from January 1970 (every 3 months are the
	// quarters, every 6 the halves), years from 1970 (every 10 are the decades 1970–1979,
	// …). Anchored periods are counted from the anchor.
	Every int
	// Zone is the time zone whose calendar and clock the periods follow. It is required:
	// there is no default, and time.Local, the host's zone, is refused.
	Zone *time.Location
	// WeekStart is the first day of a week (Unit Week without an Anchor). Its zero value is
	// time.Sunday, time.Weekday's zero; the text form requires it to be written.
	WeekStart time.Weekday
	// Anchor, when not zero, makes the periods a billing cycle: each starts at the anchor's
	// wall clock in Zone (its time of day, and its weekday for weeks, its day of the month for
	// months, its day and month for years), Every units after the one before; the period
	// that starts at the anchor is Index 0. A day of the month the month does not have is
	// its last day: a cycle anchored on January 31 starts again on February 28 (29 in a leap
	// year), March 31, April 30. A yearly cycle anchored on February 29 starts on February 28
	// in other years. An anchor's wall clock that a day skips or repeats is resolved as a
	// midnight is (see the package documentation). With an Anchor, WeekStart is not read.
	Anchor time.Time
}

// Validate returns nil if the Period can be used, or an *Error naming the field that is
// wrong: unit, every, zone, week start or anchor.
func (p Period) Validate() error {
	switch {
	case p.Unit < Day || p.Unit > Year:
		return &Error{Field: "unit", Value: p.Unit.String(), Reason: "not a unit: want day, week, month or year"}
	case p.Every < 0 || p.Every > MaxEvery:
		return &Error{Field: "every", Value: fmt.Sprint(p.Every), Reason: fmt.Sprintf("want 1 to %d units (0 is 1)", MaxEvery)}
	case p.Zone == nil:
		return &Error{Field: "zone", Value: "", Reason: noZone}
	case p.Zone == time.Local:
		return &Error{Field: "zone", Value: "Local", Reason: hostZone}
	case p.WeekStart < time.Sunday || p.WeekStart > time.Saturday:
		return &Error{Field: "week start", Value: fmt.Sprint(int(p.WeekStart)), Reason: "not a day of the week (time.Sunday to time.Saturday)"}
	}
	if !p.Anchor.IsZero() {
		if y := p.Anchor.In(p.Zone).Year(); y < 1 || y > 9999 {
			return &Error{Field: "anchor", Value: p.Anchor.Format(time.RFC3339Nano), Reason: "want a year from 1 to 9999"}
		}
	}
	return nil
}

// Bounds returns the period that holds the instant t: [start, end), both in the Period's
// Zone. Bounds(start) is the same period, and Bounds(end) the next one.
func (p Period) Bounds(t time.Time) (start, end time.Time) {
	c := p.compiled()
	_, start, end = c.find(t)
	return start.In(c.zone), end.In(c.zone)
}

// Index returns the number of the period that holds t: calendar periods are counted from
// 1970-01-01 (Every's documentation says how), a billing cycle's from the one that starts at
// the anchor (0; the one before is −1). The next period's Index is one more, except after a
// period that has no instants at all (Pacific/Apia skipped the whole of 2011-12-30): that
// Index belongs to no instant. An Index is comparable only between instants of one Period.
func (p Period) Index(t time.Time) int64 {
	k, _, _ := p.compiled().find(t)
	return k
}

// Tag returns the name of the period that holds t, for a key: its civil start, which depends
// only on the Period and the period, never on the host's zone: "d20260308" (a day), "w20260302"
// (a week, by its first day), "m202603" (a month), "y2026" (a year) and "c20260228" (a billing
// cycle, by the day it starts on, whatever its unit). A period of several units is named by
// its first. The name is the civil date the period starts on by the calendar, even when the
// clock skipped that date's midnight.
func (p Period) Tag(t time.Time) string {
	c := p.compiled()
	k, _, _ := c.find(t)
	y, m, d, _ := c.nominal(k)
	if c.anchored {
		return fmt.Sprintf("c%04d%02d%02d", y, int(m), d)
	}
	switch c.unit {
	case Month:
		return fmt.Sprintf("m%04d%02d", y, int(m))
	case Year:
		return fmt.Sprintf("y%04d", y)
	case Week:
		return fmt.Sprintf("w%04d%02d%02d", y, int(m), d)
	}
	return fmt.Sprintf("d%04d%02d%02d", y, int(m), d)
}

// String returns the Period in the text form ParsePeriod reads: "day@Europe/Berlin",
// "2weeks(monday)@UTC", "month@UTC~2026-01-31" (an anchor at local midnight is written as its
// date, another as RFC 3339 in the zone). A nil Zone is written as "@".
func (p Period) String() string {
	var b strings.Builder
	if p.Every > 1 {
		fmt.Fprintf(&b, "%d%ss", p.Every, p.Unit)
	} else {
		b.WriteString(p.Unit.String())
	}
	if p.Unit == Week && p.Anchor.IsZero() {
		fmt.Fprintf(&b, "(%s)", strings.ToLower(p.WeekStart.String()))
	}
	b.WriteByte('@')
	if p.Zone != nil {
		b.WriteString(p.Zone.String())
	}
	if !p.Anchor.IsZero() {
		b.WriteByte('~')
		a := p.Anchor
		if p.Zone != nil {
			a = a.In(p.Zone)
		}
		if a.Hour() == 0 && a.Minute() == 0 && a.Second() == 0 && a.Nanosecond() == 0 {
			b.WriteString(a.Format(time.DateOnly))
		} else {
			b.WriteString(a.Format(time.RFC3339Nano))
		}
	}
	return b.String()
}

// compiled is a Period made ready for its arithmetic.
type compiled struct {
	unit     Unit
	every    int64
	zone     *time.Location
	anchored bool
	// base is where period 0 starts: the day number of the first WeekStart on or after
	// 1970-01-01 for calendar weeks; for a billing cycle the anchor's day number (days and
	// weeks), its months since January 1970 (months), its year (years).
	base int64
	// The anchor's wall clock: day of the month, month, and time of day.
	day   int
	month time.Month
	clock time.Duration
}

func (p Period) compiled() compiled {
	c := compiled{unit: p.Unit, every: int64(p.Every), zone: p.Zone}
	if c.unit < Day || c.unit > Year {
		c.unit = Day
	}
	if c.every < 1 || c.every > MaxEvery {
		c.every = 1
	}
	if c.zone == nil {
		c.zone = time.UTC
	}
	if p.Anchor.IsZero() {
		if c.unit == Week {
			// 1970-01-01 was a Thursday.
			c.base = int64((int(p.WeekStart)%7 + 7 - int(time.Thursday)) % 7)
		}
		return c
	}
	c.anchored = true
	a := wallOf(p.Anchor, c.zone)
	y, m, d := a.Date()
	c.day, c.month = d, m
	c.clock = a.Sub(time.Date(y, m, d, 0, 0, 0, 0, time.UTC))
	switch c.unit {
	case Day, Week:
		c.base = dayNumber(y, m, d)
	case Month:
		c.base = months(y, m)
	case Year:
		c.base = int64(y)
	}
	return c
}

// months returns the months from January 1970 to month m of year y.
func months(y int, m time.Month) int64 {
	return (int64(y)-1970)*12 + int64(m) - 1
}

// length returns the days (days and weeks), months or years from one period's start to
// the next.
func (c compiled) length() int64 {
	if c.unit == Week {
		return 7 * c.every
	}
	return c.every
}

// nominal returns the wall clock at which period k starts by the calendar: its civil date
// and time of day, before the zone's clock says when that is.
func (c compiled) nominal(k int64) (int, time.Month, int, time.Duration) {
	step := k * c.length()
	switch {
	case c.unit == Month:
		mm := step
		if c.anchored {
			mm += c.base
		}
		y, m := int(1970+floorDiv(mm, 12)), time.Month(mm-floorDiv(mm, 12)*12+1)
		if !c.anchored {
			return y, m, 1, 0
		}
		return y, m, min(c.day, daysIn(y, m)), c.clock
	case c.unit == Year && c.anchored:
		y := int(c.base + step)
		return y, c.month, min(c.day, daysIn(y, c.month)), c.clock
	case c.unit == Year:
		return int(1970 + step), time.January, 1, 0
	}
	y, m, d := dateOf(c.base + step) // days and weeks
	return y, m, d, c.clock
}

// start returns the instant at which period k starts.
func (c compiled) start(k int64) time.Time {
	y, m, d, clock := c.nominal(k)
	return resolve(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Add(clock), c.zone)
}

// guess returns the period whose nominal span holds t's local civil date: the period of t,
// or one next to it (t's wall clock may be before the anchor's time of day, or in a part of
// the day the zone's clock reached twice).
func (c compiled) guess(t time.Time) int64 {
	y, m, d := t.In(c.zone).Date()
	var n int64
	switch c.unit {
	case Day, Week:
		n = dayNumber(y, m, d) - c.base
	case Month:
		n = months(y, m)
		if c.anchored {
			n -= c.base
		}
	case Year:
		n = int64(y) - 1970
		if c.anchored {
			n = int64(y) - c.base
		}
	}
	return floorDiv(n, c.length())
}

// maxSteps bounds the steps find takes from its guess: one or two suffice (a period with no
// instants is stepped over); the bound keeps an instant at the edge of time.Time's range
// from looping.
const maxSteps = 8

// find returns the period k with start(k) ≤ t < start(k+1), and those bounds.
func (c compiled) find(t time.Time) (k int64, start, end time.Time) {
	k = c.guess(t)
	start = c.start(k)
	for i := 0; i < maxSteps && t.Before(start); i++ {
		k--
		start = c.start(k)
	}
	end = c.start(k + 1)
	for i := 0; i < maxSteps && !t.Before(end); i++ {
		k, start = k+1, end
		end = c.start(k + 1)
	}
	return k, start, end
}
