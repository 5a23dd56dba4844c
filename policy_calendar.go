package ratelimit

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit/calendar"
	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// calendarPart is what a calendar policy (Policy.Period) compiles to beside its model: the
// Period, the tag of its state before the period's name, and, once the limiter has resolved it
// to the period of a check (inPeriod), that period's bounds.
type calendarPart struct {
	period     calendar.Period
	base       string    // the policy's tag: its Name, its model's code and its Period
	start, end time.Time // the period, zero until resolved
}

// resolved reports whether c names one period, so that a store can check it.
func (c *calendarPart) resolved() bool { return !c.end.IsZero() }

// calendarName is the name a calendar policy without one is given: "calendar-1000-per-day",
// "calendar-5-per-2weeks", "calendar-10000-per-month-cycle".
func calendarName(limit int64, p calendar.Period) string {
	unit := p.Unit.String()
	if p.Every > 1 {
		unit = strconv.Itoa(p.Every) + unit + "s"
	}
	name := "calendar-" + strconv.FormatInt(limit, 10) + "-per-" + unit
	if !p.Anchor.IsZero() {
		name += "-cycle"
	}
	return name
}

// compileCalendar is compile for a policy with a Period; m is the model of its Algorithm.
func (p Policy) compileCalendar(m algo.Model) (Policy, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", errInvalidPolicy, p.Name, fmt.Sprintf(format, args...))
	}
	cm := algo.CalendarOf(m)
	switch {
	case cm == nil:
		return p, bad("Algorithm is %s, which cannot count calendar periods; a Period is counted by algorithms.FixedWindow (leave Algorithm nil), from each period's start to its end",
			p.Algorithm.Name())
	case p.Window != 0:
		return p, bad("Window is %v and Period is %s; a calendar policy's periods are the calendar's, so leave Window 0", p.Window, p.Period)
	case p.Lease != 0:
		return p, bad("Lease is set on a calendar policy; only a policy of a Window leases quota")
	}
	if err := p.Period.Validate(); err != nil {
		return p, bad("Period: %v", err)
	}
	if p.Period.Unit == calendar.Year && p.Period.Every > maxCalendarYears {
		return p, bad("Period: every %d years: at most %d (every computation stays exact, and a period's length a time.Duration)", p.Period.Every, maxCalendarYears)
	}
	if err := zoneByName(p.Period.Zone); err != nil {
		return p, bad("Period: %v", err)
	}
	// The other fields as for any policy, on a window that passes (the period's length is not
	// known before a check, and nothing depends on it but the time to its end).
	q := p
	q.Window = time.Second
	if err := q.validate(cm); err != nil {
		return p, err
	}
	c := &compiledPolicy{model: cm, params: algo.Params{Limit: p.Limit}, cached: cm.ExactWait() && !p.NoDenialCache}
	c.cal = &calendarPart{period: *p.Period, base: calendarTag(&p, cm.Code())}
	c.tag = c.cal.base
	p.compiled = c
	return p, nil
}

// maxCalendarYears bounds a period of years: 100 years of microseconds stay far below 2^53,
// where Lua's numbers are exact, and below time.Duration's 292 years.
const maxCalendarYears = 100

// zoneByName reports a zone that its name does not load: time.FixedZone, or a zone given
// another's name. A calendar policy's state and the limiters a Resolver shares are named by
// the zone's name, so two zones of one name must be one zone; and each instance loads the
// zone by its name, so the name must say what it is.
func zoneByName(zone *time.Location) error {
	name := zone.String()
	loaded, err := time.LoadLocation(name)
	if err == nil && name != "" && name != "Local" {
		for y := 1970; y <= 2040; y++ {
			for _, m := range []time.Month{time.January, time.July} {
				t := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
				_, a := t.In(zone).Zone()
				_, b := t.In(loaded).Zone()
				if a != b {
					return fmt.Errorf("zone %q: not the zone of that name (at %s its offset is %ds, the named zone's %ds): give the zone time.LoadLocation loads by its name", name, t.Format(time.DateOnly), a, b)
				}
			}
		}
		return nil
	}
	return fmt.Errorf("zone %q: not a zone loaded by its name (a time.FixedZone?): give an IANA zone from time.LoadLocation, which every instance loads alike", name)
}

// calendarTag is computeTag for a calendar policy: its Period takes the Window's place, so
// that a policy whose unit, zone or anchor changes starts a new count.
func calendarTag(p *Policy, code string) string {
	return hashTag(code, p.Name, p.Period.String())
}

// inPeriod returns p, a calendar policy, resolved to the period that holds t: its parameters
// the period's start and length, its tag the policy's and the period's name ("_m202603"), so
// that every period is counted under a key of its own.
func (p Policy) inPeriod(t time.Time) Policy {
	cal := *p.compiled.cal
	cal.start, cal.end = cal.period.Bounds(t)
	return p.withPeriod(&cal)
}

// withPeriod returns p with the period of cal.
func (p Policy) withPeriod(cal *calendarPart) Policy {
	c := *p.compiled
	c.cal = cal
	c.params = algo.Params{Limit: p.Limit, Window: cal.end.UnixMicro() - cal.start.UnixMicro(), Start: cal.start.UnixMicro()}
	c.tag = cal.base + "_" + cal.period.Tag(cal.start)
	c.setArgs(p.Shadow)
	p.compiled = &c
	return p
}

// samePeriod returns q, compiled from a copy of p (the local fallback's share of it), in p's
// period when p is a calendar policy resolved to one.
func (q Policy) samePeriod(p *Policy) Policy {
	if p.compiled == nil || p.compiled.cal == nil || !p.compiled.cal.resolved() || q.compiled == nil || q.compiled.cal == nil {
		return q
	}
	cal := *p.compiled.cal
	cal.base = q.compiled.cal.base
	return q.withPeriod(&cal)
}

// periods resolves the calendar policies of a limiter to the periods of its checks. The list
// of the current periods is kept, so that a check allocates nothing until one of them ends.
type periods struct {
	policies []Policy // the limiter's, the calendar ones not resolved
	current  atomic.Pointer[periodList]
}

// periodList is a limiter's policies in the periods that hold every instant of [from, to),
// in microseconds.
type periodList struct {
	from, to int64
	policies []Policy
}

// newPeriods returns the periods of policies, or nil when none of them is a calendar policy.
func newPeriods(policies []Policy) *periods {
	for i := range policies {
		if policies[i].compiled.cal != nil {
			return &periods{policies: policies}
		}
	}
	return nil
}

// at returns the policies in the periods that hold t.
func (ps *periods) at(t time.Time) []Policy {
	us := t.UnixMicro()
	cur := ps.current.Load()
	if cur != nil && us >= cur.from && us < cur.to {
		return cur.policies
	}
	l := &periodList{from: us, to: us + 1, policies: make([]Policy, len(ps.policies))}
	first := true
	for i, p := range ps.policies {
		if p.compiled.cal == nil {
			l.policies[i] = p
			continue
		}
		r := p.inPeriod(t)
		start, end := r.compiled.cal.start.UnixMicro(), r.compiled.cal.end.UnixMicro()
		if first {
			l.from, l.to, first = start, end, false
		} else {
			l.from, l.to = max(l.from, start), min(l.to, end)
		}
		l.policies[i] = r
	}
	if cur == nil || l.to > cur.to { // a refund of an earlier period leaves the current one
		ps.current.CompareAndSwap(cur, l)
	}
	return l.policies
}

// unresolved reports a calendar policy that no limiter resolved to a period.
func unresolved(p *Policy) error {
	if c := p.compiled.cal; c != nil && !c.resolved() {
		return fmt.Errorf("ratelimit: calendar policy %q was not resolved to a period: a store checks the policies of a Limiter", p.Name)
	}
	return nil
}

// futureAnchor reports a billing cycle anchored after now: a cycle starts at or before the
// moment its policy is made.
func futureAnchor(p *Policy, now time.Time) error {
	if p.Period == nil {
		return nil
	}
	a := p.Period.Anchor
	if a.IsZero() || !a.After(now) {
		return nil
	}
	zone := p.Period.Zone
	return fmt.Errorf("%w %q: Period: anchor %q: in the future (now is %s): anchor a cycle at or before now, such as the day the subscription started",
		errInvalidPolicy, p.Name, a.In(zone).Format(time.RFC3339), now.In(zone).Format(time.RFC3339))
}
