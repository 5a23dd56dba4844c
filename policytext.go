package ratelimit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParsePolicy returns the policy of a rate written as operators write it: "<limit>/<window>",
// such as "100/min", "10/s", "5000/h", "20/10s", "1000/day" or "5/1m30s". The window is a
// unit — ms; s, sec, second; m, min, minute; h, hr, hour; d, day (plurals too) — with an
// optional whole number before it, or a Go duration. The policy has the Limit and the Window
// and nothing else: set its Name, Algorithm, Burst on the value returned. The rules files and
// the ratelimit command read rates with it too.
//
// The error names the part that is wrong: `ratelimit: rate "100/fortnight": window
// "fortnight" is not a unit (ms, s, min, h, d) or a duration`.
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
	window, ok := parseWindow(windowText)
	if !ok {
		return bad("window %q is not a unit (ms, s, min, h, d) or a duration", clip(windowText))
	}
	if window <= 0 {
		return bad("window %q: it must be positive", clip(windowText))
	}
	return Policy{Limit: limit, Window: window}, nil
}

// windowUnits are the units of a window, by every name they go by.
var windowUnits = map[string]time.Duration{
	"ms": time.Millisecond, "msec": time.Millisecond, "millisecond": time.Millisecond,
	"s": time.Second, "sec": time.Second, "second": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hour": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour,
}

// parseWindow reads "[n]unit" or a Go duration.
func parseWindow(s string) (time.Duration, bool) {
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	n, unit := int64(1), strings.ToLower(strings.TrimSpace(s[digits:]))
	if digits > 0 {
		var err error
		if n, err = strconv.ParseInt(s[:digits], 10, 64); err != nil {
			return 0, false
		}
	}
	u, ok := windowUnits[unit]
	if !ok && len(unit) > 1 && strings.HasSuffix(unit, "s") {
		u, ok = windowUnits[strings.TrimSuffix(unit, "s")] // "minutes", "days"
	}
	if ok {
		if n > int64(366*24*time.Hour/u) {
			return 0, false
		}
		return time.Duration(n) * u, true
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, true
	}
	return 0, false
}
