package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// Policy is one rate limit: Limit requests per Window, enforced by an Algorithm.
//
// Build one with [PerSecond], [PerMinute], [PerHour], [PerDay] or [Per] and refine it with
// [Policy.Using], [Policy.WithBurst] and [Policy.Named]:
//
//	ratelimit.PerMinute(100).Using(algorithms.SlidingCounter{}).Named("api")
//
// The zero Algorithm is GCRA: Limit requests at once, then one every Window/Limit. A Policy is
// a plain value; [New] validates it.
type Policy struct {
	// Name identifies the policy in headers, errors and storage keys. It must be a lower-case
	// token (a-z, 0-9, '_', '-', '.', starting with a letter). Empty means a name made from the
	// policy, e.g. "gcra-100-per-1m".
	Name string
	// Limit is the number of requests (units of cost) admitted per Window. At least 1.
	Limit int64
	// Window is the policy's period. At least one millisecond, a whole number of microseconds.
	Window time.Duration
	// Burst is the capacity of the bucket algorithms (token bucket, leaky bucket, GCRA): how
	// many requests may arrive at once. 0 means Limit. The window algorithms do not use it.
	Burst int64
	// Algorithm enforces the policy. nil means algorithms.GCRA{}.
	Algorithm algorithms.Algorithm

	compiled *compiledPolicy // set by New: what every check needs, computed once
}

// compiledPolicy is what a validated policy computes once for every check.
type compiledPolicy struct {
	tag       string
	params    algorithms.Params
	algorithm algorithms.Algorithm
	redisArgs []any // the policy's ARGV in check.lua
}

// compile validates p and returns it with its compiled form.
func (p Policy) compile() (Policy, error) {
	if err := p.Validate(); err != nil {
		return p, err
	}
	p.compiled = nil
	c := &compiledPolicy{tag: computeTag(&p), params: p.params(), algorithm: p.algorithm()}
	c.redisArgs = []any{c.algorithm.Code(), c.params.Limit, c.params.Window, c.params.Burst}
	p.compiled = c
	return p, nil
}

// Per returns a policy of limit requests per window, enforced by GCRA.
func Per(limit int64, window time.Duration) Policy {
	return Policy{Limit: limit, Window: window}
}

// PerSecond returns a policy of limit requests per second; shorthand for Per(limit, time.Second).
func PerSecond(limit int64) Policy { return Per(limit, time.Second) }

// PerMinute returns a policy of limit requests per minute.
func PerMinute(limit int64) Policy { return Per(limit, time.Minute) }

// PerHour returns a policy of limit requests per hour.
func PerHour(limit int64) Policy { return Per(limit, time.Hour) }

// PerDay returns a policy of limit requests per 24 hours.
func PerDay(limit int64) Policy { return Per(limit, 24*time.Hour) }

// Using returns a copy of p enforced by a.
func (p Policy) Using(a algorithms.Algorithm) Policy {
	p.Algorithm, p.compiled = a, nil
	return p
}

// WithBurst returns a copy of p with the given burst (see [Policy.Burst]).
func (p Policy) WithBurst(burst int64) Policy {
	p.Burst, p.compiled = burst, nil
	return p
}

// Named returns a copy of p with the given name (see [Policy.Name]).
func (p Policy) Named(name string) Policy {
	p.Name, p.compiled = name, nil
	return p
}

// algorithm returns the policy's algorithm, GCRA when none is set.
func (p Policy) algorithm() algorithms.Algorithm {
	if p.compiled != nil {
		return p.compiled.algorithm
	}
	if p.Algorithm == nil {
		return algorithms.GCRA{}
	}
	return p.Algorithm
}

// params returns the policy's parameters in the algorithms' units.
func (p Policy) params() algorithms.Params {
	if p.compiled != nil {
		return p.compiled.params
	}
	return algorithms.Params{Limit: p.Limit, Window: p.Window.Microseconds(), Burst: p.Burst}
}

// Capacity is the largest cost a single request can have under p: its burst for the bucket
// algorithms, else its limit. A costlier request is never admitted.
func (p Policy) Capacity() int64 { return p.params().Capacity() }

// DisplayName returns the policy's name, or the name made from it when Name is empty.
func (p Policy) DisplayName() string {
	if p.Name != "" {
		return p.Name
	}
	return p.defaultName()
}

func (p Policy) defaultName() string {
	code := strings.ReplaceAll(p.algorithm().Name(), "_", "-")
	return code + "-" + strconv.FormatInt(p.Limit, 10) + "-per-" + formatWindow(p.Window)
}

// String describes the policy, e.g. "100 req/1m gcra (burst 100)".
func (p Policy) String() string {
	s := fmt.Sprintf("%d req/%s %s", p.Limit, formatWindow(p.Window), p.algorithm().Name())
	switch p.algorithm().(type) {
	case algorithms.TokenBucket, algorithms.LeakyBucket, algorithms.GCRA:
		s += fmt.Sprintf(" (burst %d)", p.Capacity())
	}
	if p.Name != "" {
		s = p.Name + ": " + s
	}
	return s
}

// Limits that keep every computation exact in both engines (Lua numbers are doubles).
const (
	maxWindow   = 366 * 24 * time.Hour
	maxLimit    = 1 << 40
	maxLogLimit = 100_000 // the sliding log keeps one entry per unit of cost
	maxSpan     = 1 << 50 // microseconds (35 years): the longest a bucket may take to drain
)

// ErrInvalidPolicy is wrapped by every error [Policy.Validate] returns.
var ErrInvalidPolicy = errors.New("ratelimit: invalid policy")

// Validate reports the first thing wrong with p, naming the field to fix.
func (p Policy) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidPolicy, p.DisplayName(), fmt.Sprintf(format, args...))
	}
	switch {
	case p.Limit < 1:
		return bad("Limit is %d; it must be at least 1", p.Limit)
	case p.Limit > maxLimit:
		return bad("Limit is %d; it must be at most %d", p.Limit, int64(maxLimit))
	case p.Window < time.Millisecond:
		return bad("Window is %v; it must be at least 1ms", p.Window)
	case p.Window > maxWindow:
		return bad("Window is %v; it must be at most %v", p.Window, maxWindow)
	case p.Window%time.Microsecond != 0:
		return bad("Window is %v; it must be a whole number of microseconds", p.Window)
	case p.Burst < 0:
		return bad("Burst is %d; it must be at least 1 (or 0 for the Limit)", p.Burst)
	case p.Burst > maxLimit:
		return bad("Burst is %d; it must be at most %d", p.Burst, int64(maxLimit))
	case p.Name != "" && !validName(p.Name):
		return bad("Name must be a lower-case token of at most 64 characters: a-z first, then a-z, 0-9, '_', '-', '.'")
	}
	switch a := p.algorithm().(type) {
	case algorithms.FixedWindow, algorithms.SlidingLog, algorithms.SlidingCounter:
		if p.Burst != 0 && p.Burst != p.Limit {
			return bad("Burst is %d, but %s does not use a burst; leave it 0", p.Burst, a.Name())
		}
		if _, ok := a.(algorithms.SlidingLog); ok && p.Limit > maxLogLimit {
			return bad("Limit is %d; sliding_window_log stores one entry per request and allows at most %d (use sliding_window_counter)", p.Limit, maxLogLimit)
		}
	default:
		if p.Window.Microseconds() < p.Limit {
			return bad("Limit %d per Window %v is more than one request per microsecond", p.Limit, p.Window)
		}
		// A full bucket drains in Burst emission intervals; keep that span exact in both engines.
		if pp := p.params(); pp.Capacity() > maxSpan/pp.Interval() {
			return bad("Burst %d takes longer than %v to drain at %d per %v; lower Burst", pp.Capacity(), time.Duration(maxSpan)*time.Microsecond, p.Limit, p.Window)
		}
	}
	return nil
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// formatWindow writes a window compactly: 1s, 1m, 1h, 1d, 1500ms, 250us.
func formatWindow(d time.Duration) string {
	units := []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}}
	for _, u := range units {
		if d >= u.d && d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}
