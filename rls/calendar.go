package rls

import (
	"errors"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.yaml.in/yaml/v3"

	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/calendar"
)

// A window of rate_limit (or of its also list) with a period field, "month@Europe/Berlin", is
// a calendar quota: requests_per_unit from the start of each calendar period in the zone to
// its end, counted by the library's fixed window over calendar periods (ratelimit.Policy's
// Period). Opt-in: unit: month stays the reference's 30 days since the epoch.

// unitWithPeriod is the error of a window with both a unit and a period.
const unitWithPeriod = "unit and period do not go together: a period (month@Europe/Berlin) is the window's calendar unit and zone; give one of them"

// period reads a window's period, "month@Europe/Berlin" as calendar.ParsePeriod reads it; nil
// when n is absent or refused (reported). a is the window's algorithm: a period is counted by
// the fixed window only.
func (p *parser) period(n *yaml.Node, a algorithms.Algorithm) *calendar.Period {
	if isNull(n) {
		return nil
	}
	text, ok := p.str(n, "period")
	if !ok {
		return nil
	}
	if a != nil && a.Name() != (algorithms.FixedWindow{}).Name() {
		p.errorf(n.Line, "period is given with algorithm %s: a calendar period is counted by fixed_window only, from its start to its end (leave algorithm out)", a.Name())
		return nil
	}
	// An anchor after now is refused: a billing cycle starts at or before the moment it is
	// read. (The limiter refuses one after its own clock's now too.)
	per, err := calendar.ParsePeriod(text, time.Now())
	if err != nil {
		var ce *calendar.Error
		if errors.As(err, &ce) {
			p.errorf(n.Line, "period %q: %v (a period is [every]unit[(weekday)]@zone[~anchor]: month@Europe/Berlin, day@UTC, week(monday)@America/New_York, month@UTC~2026-01-31)", text, ce)
		} else {
			p.errorf(n.Line, "period %q: %v", text, err)
		}
		return nil
	}
	return &per
}

// reportUnit is the unit a window of period per reports in current_limit: the period's
// (DAY, WEEK, MONTH, YEAR); UNKNOWN for a period of several units (2weeks), which no unit of
// the protocol names.
func reportUnit(per *calendar.Period) rlsv3.RateLimitResponse_RateLimit_Unit {
	if per.Every > 1 {
		return rlsv3.RateLimitResponse_RateLimit_UNKNOWN
	}
	switch per.Unit {
	case calendar.Day:
		return rlsv3.RateLimitResponse_RateLimit_DAY
	case calendar.Week:
		return rlsv3.RateLimitResponse_RateLimit_WEEK
	case calendar.Month:
		return rlsv3.RateLimitResponse_RateLimit_MONTH
	case calendar.Year:
		return rlsv3.RateLimitResponse_RateLimit_YEAR
	}
	return rlsv3.RateLimitResponse_RateLimit_UNKNOWN
}

// untilPeriodEnd is the time from now to the end of the period of per that holds now, in
// whole seconds rounded up.
func untilPeriodEnd(per *calendar.Period, now time.Time) time.Duration {
	_, end := per.Bounds(now)
	return ceilSecond(end.Sub(now))
}
