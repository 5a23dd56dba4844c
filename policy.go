package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/calendar"
	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// Policy is one rate limit: Limit requests (units of cost) per Window, enforced by an
// Algorithm. You write it as a plain value; [New] validates it and keeps a compiled copy, the
// one a [Store] is given (so a Store written elsewhere can pass policies on, not evaluate
// them):
//
//	ratelimit.Policy{Limit: 100, Window: time.Minute}                                       // GCRA
//	ratelimit.Policy{Name: "api", Limit: 100, Window: time.Minute, Algorithm: algorithms.SlidingCounter{}}
//	ratelimit.Policy{Limit: 5, Window: 10 * time.Second, Burst: 10, Algorithm: algorithms.TokenBucket{}}
//	ratelimit.Policy{Name: "daily", Limit: 1000, Period: &calendar.Period{Unit: calendar.Day, Zone: newYork}}
//
// The zero Algorithm is GCRA: Burst (default Limit) requests at once, then one every
// Window/Limit.
//
// The arithmetic is exact — the emission interval Window/Limit is held as a fraction, never
// rounded — within one bound: every value the Redis script computes stays below 2^53, where
// Lua's numbers (doubles) are exact. For the rate-based algorithms that means Burst ×
// Window/gcd(Window, Limit) in microseconds below 2^53 (10^9 per second with a burst of 10^9
// fits, as do all the usual limits); New refuses a policy beyond it and says so.
type Policy struct {
	// Name identifies the policy in headers, errors and storage keys: a lower-case token (a-z
	// first, then a-z, 0-9, '_', '-', '.'; at most 64 bytes). Empty means a name made from the
	// policy, such as "gcra-100-per-1m", which New fills in.
	//
	// State is stored under the Name, the Algorithm and the Window: a policy whose Limit or
	// Burst changes keeps its count (package algorithms says what each algorithm keeps), and
	// policies of one Name, Algorithm and Window share one count on a store, whatever their
	// limits. A made-up name holds the Limit, so name a policy whose count should outlive a
	// change of its limit.
	Name string
	// Limit is the number of requests (units of cost) admitted per Window: at least 1, at most
	// 2^40.
	Limit int64
	// Window is the policy's period: at least a millisecond, at most 366 days, a whole number
	// of microseconds. A calendar policy (Period) leaves it 0.
	Window time.Duration
	// Period makes the policy a quota of the calendar: Limit per day, week, month or year in
	// a time zone, or per billing cycle from an anchor (package calendar), in place of a
	// Window. The periods are the calendar's, however long: a day of 23 or 25 hours where the
	// clock changes, a month of 28 to 31 days. Its Algorithm is algorithms.FixedWindow (nil
	// means it), counting from each period's start to its end; the limiter finds the period of
	// each check on its store's clock. State is kept under the period's name (its civil start,
	// such as m202603) until a minute after it ends, so a period never bleeds into the next;
	// a Limit that changes keeps the period's count, and a Name, unit or zone that changes,
	// or a new anchor, starts a new count at once. See docs/calendar.md.
	Period *calendar.Period
	// Burst is the capacity of the rate-based algorithms (token bucket, leaky bucket, GCRA):
	// how many units may arrive at once. 0 means Limit. The window algorithms do not use it.
	Burst int64
	// Algorithm enforces the policy; nil means algorithms.GCRA{}.
	Algorithm algorithms.Algorithm
	// Shadow makes the policy a trial: it is evaluated and reported (in Decision.Results and
	// to the store's Observer) but never denies, delays or names a request in headers. Its
	// state counts what it would have admitted enforced alone, so its verdicts are what
	// enforcing it would decide. Keep its Name when enforcing it, and its count carries over,
	// even if its Limit changes too.
	Shadow bool
	// NoDenialCache keeps the policy's denials out of the Redis store's denial cache (see
	// [WithDenialCache]) and out of the denials its quota leases answer (see Lease): a request
	// it denies asks Redis every time. The cache needs it only
	// when something other than this library gives back what the policy counts (a script of
	// your own that writes its keys): refunds and resets made by any instance, or by the
	// ratelimit command, end cached denials everywhere. A request that another policy of the
	// list denies too is still answered from the cache until that policy's Retry-After. The
	// memory store has no denial cache.
	NoDenialCache bool

	// Lease lets an instance that sees one identity at a high rate serve it from a lease of
	// quota: it takes several units from the store in one atomic call (charged there, so the
	// fleet's total stays exact), hands them out locally, and gives back what it did not use
	// when the lease ends, after Lease at the latest. The units follow the identity's rate
	// on this instance and shrink as the quota runs out; a request they cannot cover goes to
	// the store. 0, the default, leases nothing. Only a FixedWindow policy leases (a lease
	// ends with the window it was charged in, so its units are never spent in the next; a
	// meter or a sliding window would admit more than its limit when units charged at one
	// time are spent a little later), Lease must be shorter than Window, and a list leases
	// only when every policy of it sets Lease. Tens of milliseconds keep the headers true
	// within a lease: see docs/redis.md, "Hot identities".
	Lease time.Duration

	compiled *compiledPolicy // set by New: what every check needs, computed once
}

// compiledPolicy is what a validated policy computes once for every check.
type compiledPolicy struct {
	tag       string
	params    algo.Params
	model     algo.Model
	redisArgs []any // the policy's ARGV in check.lua: one string, "code:limit:window:burst:shadow"
	// hashArgs is redisArgs for a store with hash state (WithHashState): the policy's tag
	// after a colon, the field of the identity's hash that holds its state; redisArgs itself
	// for a policy whose state is a log, which keeps a key of its own (hashed false).
	hashArgs []any
	hashed   bool
	holds    bool // an in-flight limit: its charges are slots, held until given back
	// cached: a denial of this policy may be answered by the denial cache until its
	// Retry-After, which its model says is exact, and NoDenialCache is not set.
	cached bool
	// cal is a calendar policy's Period and its period, nil for a policy of a Window.
	cal *calendarPart
}

// holds reports whether p is an in-flight limit, whose charges are slots held until the
// request ends ([algorithms.InFlight]).
func (p *Policy) holds() bool { return p.compiled != nil && p.compiled.holds }

// Limits that keep every computation exact in both engines.
const (
	maxWindow     = 366 * day
	maxWindowText = "366 days"
	maxLimit      = 1 << 40
)

// errInvalidPolicy starts every error of a policy that New refuses.
var errInvalidPolicy = errors.New("ratelimit: invalid policy")

// compile validates p and returns it with its name filled in and its compiled form.
func (p Policy) compile() (Policy, error) {
	p.compiled = nil
	calendared := p.Period != nil
	switch {
	case p.Algorithm != nil:
	case calendared:
		p.Algorithm = algorithms.FixedWindow{}
	default:
		p.Algorithm = algorithms.GCRA{}
	}
	m := algo.Of(p.Algorithm)
	if m == nil { // the interface is sealed: only a nil pointer gets here
		return p, fmt.Errorf("%w: Algorithm %#v is not one of package algorithms", errInvalidPolicy, p.Algorithm)
	}
	switch {
	case p.Name != "":
	case algo.Holds(m):
		p.Name = "in-flight-" + strconv.FormatInt(p.Limit, 10)
	case calendared:
		p.Name = calendarName(p.Limit, *p.Period)
	default:
		p.Name = strings.ReplaceAll(p.Algorithm.Name(), "_", "-") + "-" + strconv.FormatInt(p.Limit, 10) + "-per-" + formatWindow(p.Window)
	}
	if calendared {
		return p.compileCalendar(m)
	}
	if err := p.validate(m); err != nil {
		return p, err
	}
	c := &compiledPolicy{model: m, params: algo.NewParams(p.Limit, p.Window.Microseconds(), p.Burst), holds: algo.Holds(m)}
	c.cached = m.ExactWait() && !c.holds && !p.NoDenialCache
	c.tag = computeTag(&p, m.Code())
	c.hashed = !algo.KeepsLog(m)
	c.setArgs(p.Shadow)
	p.compiled = c
	return p, nil
}

// setArgs sets c's ARGV strings in check.lua from its model, parameters and tag.
func (c *compiledPolicy) setArgs(shadow bool) {
	sh := "0"
	if shadow {
		sh = "1"
	}
	// A calendar period passes its start in the burst's place (see calendar_window.lua).
	burst := c.params.Burst
	if c.cal != nil {
		burst = c.params.Start
	}
	spec := c.model.Code() + ":" + strconv.FormatInt(c.params.Limit, 10) + ":" + strconv.FormatInt(c.params.Window, 10) +
		":" + strconv.FormatInt(burst, 10) + ":" + sh
	c.redisArgs, c.hashArgs = []any{spec}, []any{spec}
	if c.hashed {
		c.hashArgs = []any{spec + ":" + c.tag}
	}
}

// validate reports the first thing wrong with p, naming the field to fix.
func (p Policy) validate(m algo.Model) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", errInvalidPolicy, p.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case p.Limit < 1:
		return bad("Limit is %d; it must be at least 1", p.Limit)
	case p.Limit > maxLimit:
		return bad("Limit is %d; it must be at most 2^40", p.Limit)
	case p.Window < time.Millisecond:
		return bad("Window is %v; it must be at least 1ms", p.Window)
	case p.Window > maxWindow:
		return bad("Window is %s; it must be at most %s", formatWindow(p.Window), maxWindowText)
	case p.Window%time.Microsecond != 0:
		return bad("Window is %v; it must be a whole number of microseconds", p.Window)
	case p.Burst < 0:
		return bad("Burst is %d; it must be at least 1 (or 0 for the Limit)", p.Burst)
	case p.Burst > maxLimit:
		return bad("Burst is %d; it must be at most 2^40", p.Burst)
	case !validName(p.Name):
		return bad("Name must be a lower-case token of at most 64 bytes: a-z first, then a-z, 0-9, '_', '-', '.'")
	case !m.UsesBurst() && p.Burst != 0 && p.Burst != p.Limit:
		return bad("Burst is %d, but %s does not use a burst; leave it 0", p.Burst, p.Algorithm.Name())
	case p.Lease < 0:
		return bad("Lease is %v; it must be positive, or 0 for none", p.Lease)
	case p.Lease > 0 && m.Code() != "fw":
		return bad("Lease is set, but only a fixed_window policy can lease quota exactly; %s would admit more than its limit when leased units are spent after they were charged", p.Algorithm.Name())
	case p.Lease > 0 && p.Shadow:
		return bad("Lease is set on a shadow policy; a shadow policy never leases")
	case p.Lease >= p.Window:
		return bad("Lease is %v; it must be shorter than the Window (%v): tens of milliseconds", p.Lease, p.Window)
	}
	if err := m.Validate(algo.NewParams(p.Limit, p.Window.Microseconds(), p.Burst)); err != nil {
		return bad("%v", err)
	}
	return nil
}

// capacity is the largest cost a single request can have under p: its burst for the
// rate-based algorithms, else its limit. A costlier request is never admitted.
func (p *Policy) capacity() int64 {
	if p.compiled != nil {
		return p.compiled.params.Capacity()
	}
	if p.Burst > 0 {
		return p.Burst
	}
	return p.Limit
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
