package calendar

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Error is a period, or a part of one, that cannot be: which field, the value given, and why.
// Its message is `<field> "<value>": <reason>`, such as `zone "Mars/Olympus": unknown time
// zone: want an IANA name such as Europe/Berlin, America/New_York or UTC`, without a package
// prefix, for the caller to put its own context in front (the rate it read, the rules file's
// line).
type Error struct {
	Field  string // "unit", "every", "week start", "zone" or "anchor"
	Value  string // the value as given, clipped to 64 bytes
	Reason string // what is wrong and what to write instead
}

// Error returns the message.
func (e *Error) Error() string { return fmt.Sprintf("%s %q: %s", e.Field, e.Value, e.Reason) }

// fieldError returns an *Error, its value clipped.
func fieldError(field, value, reason string, args ...any) *Error {
	if len(value) > 64 {
		value = value[:61] + "..."
	}
	return &Error{Field: field, Value: value, Reason: fmt.Sprintf(reason, args...)}
}

// The reasons for refusing a zone that says no zone.
const (
	noZone   = "missing: give an IANA time zone such as Europe/Berlin, America/New_York or UTC (the host's zone is never used)"
	hostZone = "the host's zone is never used (two hosts in different zones would disagree): give an IANA time zone such as Europe/Berlin or UTC"
)

// ParseZone returns the time zone of an IANA name ("Europe/Berlin", "America/New_York",
// "UTC"), from the host's time zone database or the one embedded by time/tzdata. It refuses
// "" and "Local" (in any case), which would mean the host's zone, and a name the database
// does not have, with an *Error of field "zone".
func ParseZone(name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return nil, fieldError("zone", name, noZone)
	case strings.EqualFold(name, "Local"):
		return nil, fieldError("zone", name, hostZone)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fieldError("zone", name, "unknown time zone: want an IANA name such as Europe/Berlin, America/New_York or UTC")
	}
	return loc, nil
}

// weekdays are the days of the week by every name ParseWeekday knows.
var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "sun": time.Sunday,
	"monday": time.Monday, "mon": time.Monday,
	"tuesday": time.Tuesday, "tue": time.Tuesday,
	"wednesday": time.Wednesday, "wed": time.Wednesday,
	"thursday": time.Thursday, "thu": time.Thursday,
	"friday": time.Friday, "fri": time.Friday,
	"saturday": time.Saturday, "sat": time.Saturday,
}

// ParseWeekday returns the day of the week of an English name, in full or in three letters
// and in any case ("monday", "Mon", "SUNDAY"), or an *Error of field "week start" naming the
// value.
func ParseWeekday(s string) (time.Weekday, error) {
	if d, ok := weekdays[strings.ToLower(strings.TrimSpace(s))]; ok {
		return d, nil
	}
	return 0, fieldError("week start", s, "not a day of the week: want monday to sunday, or mon to sun")
}

// ParseAnchor returns the instant a billing cycle is anchored at: a date, "2026-01-31", which
// is that day's midnight in zone (resolved as a period's start is, when the zone skips or
// repeats it), or an RFC 3339 time, "2026-01-31T09:30:00+01:00" or "…Z". An anchor after now
// is refused: a cycle is anchored at or before the moment its policy is read, such as the day
// a subscription started. Errors are *Error of field "anchor" (or "zone", for a nil zone).
func ParseAnchor(s string, zone *time.Location, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case zone == nil:
		return time.Time{}, fieldError("zone", "", noZone)
	case zone == time.Local:
		return time.Time{}, fieldError("zone", "Local", hostZone)
	case s == "":
		return time.Time{}, fieldError("anchor", s, "missing: want a date such as 2026-01-31 or an RFC 3339 time such as 2026-01-31T09:30:00+01:00")
	}
	var a time.Time
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		a = resolve(d, zone)
	} else if a, err = time.Parse(time.RFC3339Nano, s); err != nil {
		return time.Time{}, fieldError("anchor", s, "not a date (2026-01-31, midnight in the period's zone) or an RFC 3339 time (2026-01-31T09:30:00+01:00)")
	}
	if y := a.In(zone).Year(); y < 1 || y > 9999 {
		return time.Time{}, fieldError("anchor", s, "want a year from 1 to 9999 in the period's zone")
	}
	if a.After(now) {
		return time.Time{}, fieldError("anchor", s, "in the future (now is %s): anchor a cycle at or before now, such as the day the subscription started",
			now.In(zone).Format(time.RFC3339))
	}
	return a.In(zone), nil
}

// ParsePeriod reads a calendar period as a rate writes it after its count and slash ("1000/"
// in "1000/day@Europe/Berlin"):
//
//	period  = [every] unit ["(" weekday ")"] "@" zone ["~" anchor]
//	every   = 1 to 1000 in digits, the units a period spans (1 when absent)
//	unit    = "day" / "week" / "month" / "year", or its plural, in any case
//	weekday = the week's first day, as ParseWeekday reads it; required for a week without
//	          an anchor, refused otherwise
//	zone    = an IANA time zone, as ParseZone reads it; always required
//	anchor  = a date or an RFC 3339 time, as ParseAnchor reads it (now is its present)
//
// Examples: "day@Europe/Berlin", "month@UTC", "week(sunday)@America/New_York",
// "2weeks(monday)@UTC", "month@UTC~2026-01-31", "year@Asia/Tokyo~2024-02-29". The "@" is what
// tells a calendar period from a duration: "1000/day" is a window of 24 hours, which
// ratelimit.ParsePolicy reads; "1000/day@UTC" is the calendar day in UTC. Spaces around each
// part are ignored.
//
// The error is an *Error naming the field that is wrong: unit, every, week start, zone or
// anchor.
func ParsePeriod(text string, now time.Time) (Period, error) {
	unitText, rest, hasZone := strings.Cut(text, "@")
	zoneText, anchorText, hasAnchor := strings.Cut(rest, "~")
	unitText = strings.TrimSpace(unitText)

	var p Period
	var weekText string
	hasWeekStart := false
	if open := strings.IndexByte(unitText, '('); open >= 0 {
		inner, ok := strings.CutSuffix(unitText[open+1:], ")")
		if !ok || strings.ContainsAny(inner, "()") {
			return Period{}, fieldError("week start", unitText[open:], "want the week's first day in parentheses after the unit, such as week(monday)")
		}
		weekText, hasWeekStart = inner, true
		unitText = strings.TrimSpace(unitText[:open])
	}

	digits := len(unitText) - len(strings.TrimLeft(unitText, "0123456789"))
	p.Every = 1
	if digits > 0 {
		n, err := strconv.Atoi(unitText[:digits])
		if err != nil || n < 1 || n > MaxEvery {
			return Period{}, fieldError("every", unitText[:digits], "want 1 to %d units in a period", MaxEvery)
		}
		p.Every = n
	}
	name := strings.ToLower(strings.TrimSpace(unitText[digits:]))
	switch strings.TrimSuffix(name, "s") {
	case "day":
		p.Unit = Day
	case "week":
		p.Unit = Week
	case "month":
		p.Unit = Month
	case "year":
		p.Unit = Year
	default:
		return Period{}, fieldError("unit", unitText[digits:], "not a calendar unit: want day, week, month or year (or a number of them: 2weeks)")
	}

	if !hasZone {
		return Period{}, fieldError("zone", "", "missing: write the zone after @, such as %s@Europe/Berlin or %s@UTC (the host's zone is never used)", name, name)
	}
	zone, err := ParseZone(zoneText)
	if err != nil {
		return Period{}, err
	}
	p.Zone = zone

	if hasAnchor {
		if p.Anchor, err = ParseAnchor(anchorText, zone, now); err != nil {
			return Period{}, err
		}
	}

	switch {
	case hasWeekStart && p.Unit != Week:
		return Period{}, fieldError("week start", weekText, "only a week has a first day, not a %s", p.Unit)
	case hasWeekStart && hasAnchor:
		return Period{}, fieldError("week start", weekText, "a cycle's weeks start on its anchor's weekday: give a week start or an anchor, not both")
	case hasWeekStart:
		if p.WeekStart, err = ParseWeekday(weekText); err != nil {
			return Period{}, err
		}
	case p.Unit == Week && !hasAnchor:
		return Period{}, fieldError("week start", "", "missing: write the week's first day, such as week(monday) or week(sunday)")
	}
	if p.Every == 1 {
		p.Every = 0 // the zero value, as a Period written in Go has it
	}
	return p, p.Validate()
}
