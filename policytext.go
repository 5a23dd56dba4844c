package ratelimit

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit/calendar"
)

// ParsePolicy returns the policy of a rate written as operators write it: "<limit>/<window>",
// such as "100/min", "10/s", "5000/h", "20/10s", "1000/day", "100/1d" or "5/1m30s". The window
// is a duration as [ParseDuration] reads it: a unit — ms; s, sec, second; m, min, minute; h,
// hr, hour; d, day (plurals too) — with an optional whole number before it, or a Go duration
// that may start with whole days. The policy has the Limit and the Window and nothing else:
// set its Name, Algorithm, Burst on the value returned. The rules files and the ratelimit
// command read rates with it too.
//
// A window with an "@" is a period of the calendar, as calendar.ParsePeriod reads it:
// "1000/day@America/New_York" (each calendar day in New York), "10000/month@UTC",
// "500/week(monday)@Europe/Berlin", "10000/month@UTC~2026-01-31" (a billing month anchored
// on January 31). The policy then has the Limit and the Period. "1000/day" without a zone is
// a Window of 24 hours, not a calendar day.
//
// The error names the part that is wrong: `ratelimit: rate "100/fortnight": window
// "fortnight" is not a unit (ms, s, min, h, d) or a duration`, `ratelimit: rate "1/367d":
// window "367d": it must be at most 366 days`.
func ParsePolicy(rate string) (Policy, error) {
	bad := func(format string, args ...any) (Policy, error) {
		return Policy{}, fmt.Errorf("ratelimit: rate %q: %s", clip(rate), fmt.Sprintf(format, args...))
	}
	limitText, windowText, ok := strings.Cut(rate, "/")
	if !ok {
		return bad("want <limit>/<window>, such as 100/min or 20/10s")
	}
	limitText, windowText = strings.TrimSpace(limitText), strings.TrimSpace(windowText)
	limit, err := strconv.ParseInt(strings.ReplaceAll(limitText, "_", ""), 10, 64)
	if err != nil || limitText == "" || strings.HasPrefix(limitText, "_") {
		return bad("limit %q is not a whole number", clip(limitText))
	}
	if limit < 1 {
		return bad("limit %d: it must be at least 1", limit)
	}
	if strings.Contains(windowText, "@") { // a calendar period: "1000/day@Europe/Berlin"
		// Any anchor passes here: New refuses one after its store's clock's now.
		period, err := calendar.ParsePeriod(windowText, time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))
		if err != nil {
			return bad("period %q: %v", clip(windowText), err)
		}
		return Policy{Limit: limit, Period: &period}, nil
	}
	window, status := parseDuration(windowText)
	switch {
	case status == durationBad && calendarUnit(windowText):
		return bad("window %q is a unit of the calendar: write its time zone after @, such as %s@UTC or %s@Europe/Berlin (a day without a zone is 24 hours: %s)",
			clip(windowText), clip(windowText), clip(windowText), "1/day")
	case status == durationBad:
		return bad("window %q is not a unit (ms, s, min, h, d) or a duration", clip(windowText))
	case status == durationTooLong || window > maxWindow:
		return bad("window %q: it must be at most %s", clip(windowText), maxWindowText)
	case window <= 0:
		return bad("window %q: it must be positive", clip(windowText))
	}
	return Policy{Limit: limit, Window: window}, nil
}

// calendarUnit reports whether s names a unit of the calendar that is not a duration: a week,
// a month or a year, with a count or not.
func calendarUnit(s string) bool {
	s = strings.ToLower(strings.TrimLeft(strings.TrimSpace(s), "0123456789"))
	switch strings.TrimSuffix(s, "s") {
	case "week", "month", "year":
		return true
	}
	return false
}

// ParseDuration reads a duration as rules files, rates and the ratelimit command write one: a
// Go duration ("250ms", "1m30s", "24h"), which may start with whole days of 24 hours ("1d",
// "7d", "1d12h"); or one unit with an optional whole number before it, by any of the names
// [ParsePolicy] knows ("day", "2days", "10sec", "min"). A sign may lead, as in Go. It is the
// one reader of durations of the rules module and the ratelimit command, so that a day is
// written alike everywhere: a rules file's window, a rate, a flag.
//
// A duration is refused beyond time.Duration's range (about 292 years) with an error saying
// so; a Policy's Window is at most 366 days, which [New] and ParsePolicy check and name.
func ParseDuration(s string) (time.Duration, error) {
	switch d, status := parseDuration(strings.TrimSpace(s)); status {
	case durationOK:
		return d, nil
	case durationTooLong:
		return 0, fmt.Errorf("ratelimit: duration %q: out of range (at most about 292 years; a Policy's Window, %s)", clip(s), maxWindowText)
	}
	return 0, fmt.Errorf("ratelimit: duration %q: want a duration such as 1s, 1m30s, 250ms or 1d (whole days, 24 hours each, may lead: 1d12h)", clip(s))
}

// What parseDuration found.
const (
	durationOK      = iota
	durationBad     // not a duration
	durationTooLong // a duration beyond time.Duration's range
)

// windowUnits are the units of a window, by every name they go by.
var windowUnits = map[string]time.Duration{
	"ms": time.Millisecond, "msec": time.Millisecond, "millisecond": time.Millisecond,
	"s": time.Second, "sec": time.Second, "second": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hour": time.Hour,
	"d": day, "day": day,
}

const day = 24 * time.Hour

// parseDuration reads "[n]unit", or a Go duration that may start with "<n>d", as
// ParseDuration documents.
func parseDuration(s string) (time.Duration, int) {
	sign, rest := time.Duration(1), s
	if r, ok := strings.CutPrefix(rest, "-"); ok {
		sign, rest = -1, r
	} else {
		rest = strings.TrimPrefix(rest, "+")
	}
	digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	unitText := strings.ToLower(strings.TrimSpace(rest[digits:]))
	u, ok := windowUnits[unitText]
	if !ok && len(unitText) > 1 && strings.HasSuffix(unitText, "s") {
		u, ok = windowUnits[strings.TrimSuffix(unitText, "s")] // "minutes", "days"
	}
	switch {
	case ok: // "[n]unit"
		return times(sign, rest[:digits], u, 0)
	case digits > 0 && digits < len(rest) && rest[digits] == 'd': // "<n>d" and a Go duration
		more, err := time.ParseDuration(rest[digits+1:])
		if err != nil || more < 0 || strings.HasPrefix(rest[digits+1:], "+") {
			return 0, durationBad
		}
		return times(sign, rest[:digits], day, more)
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, durationOK
	}
	if goDuration.MatchString(s) {
		return 0, durationTooLong // written right, and time.ParseDuration refused it: too long
	}
	return 0, durationBad
}

// goDuration is the syntax of a Go duration.
var goDuration = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// times returns sign × (n × unit + more), n written in digits ("" for 1), or why not.
func times(sign time.Duration, digits string, unit, more time.Duration) (time.Duration, int) {
	n := int64(1)
	if digits != "" {
		var err error
		if n, err = strconv.ParseInt(digits, 10, 64); err != nil {
			return 0, durationTooLong // only digits: too many of them
		}
	}
	if n > (math.MaxInt64-int64(more))/int64(unit) {
		return 0, durationTooLong
	}
	return sign * (time.Duration(n)*unit + more), durationOK
}
