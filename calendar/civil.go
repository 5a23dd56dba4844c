package calendar

import "time"

// A civil date (a day of the proleptic Gregorian calendar, in no zone) is counted here as its
// day number: the days since 1970-01-01, which is day 0. A wall clock (a civil date and a time
// of day, in no zone) is a time.Time in UTC whose fields are that wall clock: the arithmetic
// of dates is then time's own, and only resolve meets a zone.

// secondsPerDay is the length of a civil day in the arithmetic of dates (a zone's days vary).
const secondsPerDay = 24 * 60 * 60

// dayNumber returns the day number of the civil date y-m-d; an out-of-range month or day
// normalises as time.Date does (January 32 is February 1).
func dayNumber(y int, m time.Month, d int) int64 {
	return floorDiv(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix(), secondsPerDay)
}

// dateOf returns the civil date of a day number.
func dateOf(day int64) (int, time.Month, int) {
	return time.Unix(day*secondsPerDay, 0).UTC().Date()
}

// localDay returns the day number of t's civil date in zone.
func localDay(t time.Time, zone *time.Location) int64 {
	return dayNumber(t.In(zone).Date())
}

// daysIn returns the number of days of month m of year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// wallOf returns the wall clock t shows in zone.
func wallOf(t time.Time, zone *time.Location) time.Time {
	l := t.In(zone)
	y, m, d := l.Date()
	return time.Date(y, m, d, l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// window is how far from a wall clock, on either side, resolve looks for the instants that
// show it. A zone's offset from UTC stays within ±26 hours (today's extremes are −12 and +14;
// local mean times before standard time reach about ±16), so an instant showing the wall
// clock w, or the transition that skips it, is within this of w read as UTC.
const window = 30 * time.Hour

// maxSpans bounds the zone's spans (stretches of one offset) resolve walks through in its
// window: real zones change at most a few times in 60 hours.
const maxSpans = 8

// resolve returns the instant at which the wall clock w (fields in UTC) happens in zone: the
// first instant that shows it when it happens more than once (a clock set back repeats an
// hour: the first occurrence), and, when it never happens (a clock set forward skips it:
// America/Santiago went from 2022-09-10 23:59:59.999 to 2022-09-11 01:00, so that day had no
// midnight), the first instant after it, the moment the clock jumped over it.
//
// time.Date does not promise either: for America/Santiago's missing midnight it answers
// 23:00 of the day before.
func resolve(w time.Time, zone *time.Location) time.Time {
	// Walk the zone's spans of one offset that overlap [w−window, w+window], in time order.
	type span struct {
		from   time.Time // the span's start, or w−window for the first
		offset int       // seconds east of UTC
	}
	var spans [maxSpans]span
	n, at, last := 0, w.Add(-window), w.Add(window)
	for n < maxSpans {
		l := at.In(zone)
		_, offset := l.Zone()
		spans[n] = span{at, offset}
		n++
		_, end := l.ZoneBounds()
		if end.IsZero() || end.After(last) || !end.After(at) {
			break
		}
		at = end
	}
	// The first span (in time order) holding the instant that shows w with its offset holds
	// the first instant that shows w.
	for i := range n {
		c := w.Add(-time.Duration(spans[i].offset) * time.Second)
		if c.Before(spans[i].from) {
			continue
		}
		if i+1 < n && !c.Before(spans[i+1].from) {
			continue
		}
		if i+1 == n && c.After(last) {
			continue
		}
		return c
	}
	// No instant shows w: it was skipped at the transition whose clock went from before w to
	// after it.
	for i := 1; i < n; i++ {
		before := spans[i].from.Add(time.Duration(spans[i-1].offset) * time.Second)
		after := spans[i].from.Add(time.Duration(spans[i].offset) * time.Second)
		if !w.Before(before) && w.Before(after) {
			return spans[i].from
		}
	}
	// Not reached for a real zone; answer as time.Date would rather than fail.
	return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), zone)
}

// floorDiv returns ⌊a/b⌋ for b > 0 (Go's / truncates toward zero).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
