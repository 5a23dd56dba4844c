package rls

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/calendar"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.yaml.in/yaml/v3"
)

// window is one window of a rule: rate_limit's own (unit, requests_per_unit, algorithm,
// burst), or one of its `also` list. A rule's windows are checked together, all or nothing,
// in one store call.
type window struct {
	unit      rlsv3.RateLimitResponse_RateLimit_Unit
	perUnit   uint32
	algorithm algorithms.Algorithm // nil: fixed window, aligned to the Unix epoch (the reference's)
	burst     int64                // 0: requests_per_unit
	// period, when not nil, makes the window a calendar quota (rate_limit's period field,
	// calendar.go): a fixed window over the period's days, weeks, months or years in its zone.
	// unit is then the period's (reportUnit), never read as a length.
	period *calendar.Period
}

// windows returns the rule's windows: rate_limit's own first, then its `also`, in file order.
func (r *rule) windows() []window {
	return append([]window{{unit: r.unit, perUnit: r.perUnit, algorithm: r.algorithm, burst: r.burst, period: r.period}}, r.also...)
}

// plain reports whether the rule is one the reference has: a single fixed window of a unit.
func (r *rule) plain() bool { return r.algorithm == nil && len(r.also) == 0 && r.period == nil }

// windowPolicyName names window i of a rule whose policy name is name: the name itself for the
// first, so that a rule without `also` keeps its counts, and name-2, name-3... for the others.
func windowPolicyName(name string, i int) string {
	if i == 0 {
		return name
	}
	return name + "-" + strconv.Itoa(i+1)
}

// policies returns the store's policies of windows, named after name.
func policiesOf(name string, windows []window) ([]ratelimit.Policy, error) {
	out := make([]ratelimit.Policy, len(windows))
	for i, w := range windows {
		if w.period != nil {
			out[i] = ratelimit.Policy{Name: windowPolicyName(name, i), Limit: int64(w.perUnit), Period: w.period}
			continue
		}
		d, ok := unitWindow(w.unit)
		if !ok {
			return nil, fmt.Errorf("unknown unit %v", w.unit)
		}
		a := w.algorithm
		if a == nil {
			a = algorithms.FixedWindow{}
		}
		out[i] = ratelimit.Policy{Name: windowPolicyName(name, i), Limit: int64(w.perUnit), Window: d, Burst: w.burst, Algorithm: a}
	}
	return out, nil
}

// validate refuses a rule whose windows the library would refuse (a burst too large for the
// exact arithmetic, say), so that the file is refused at its line instead of at SetConfig.
func (r *rule) validate() error {
	if r.unlimited || r.perUnit == 0 {
		return nil
	}
	ps, err := policiesOf(r.policyName, r.windows())
	if err != nil {
		return err
	}
	if _, err := ratelimit.New(noStore{}, ps...); err != nil {
		return fmt.Errorf("the windows are refused: %w", err)
	}
	return nil
}

// noStore is the store of the limiters built only to validate a rule's windows; they never
// check anything.
type noStore struct{}

var errNoStore = errors.New("rls: a limiter built to validate a configuration")

func (noStore) Check(context.Context, string, []ratelimit.Policy, int64, bool, []ratelimit.PolicyResult) (time.Time, error) {
	return time.Time{}, errNoStore
}
func (noStore) Refund(context.Context, string, []ratelimit.Policy, int64, time.Time) error {
	return errNoStore
}
func (noStore) Reset(context.Context, string, []ratelimit.Policy) error { return errNoStore }

// The algorithms a rule may name, and why the others are refused.
var refusedAlgorithms = map[string]string{
	algorithms.InFlight{}.Name():                 "it limits requests at once and needs each request's end, which the rate limit service never hears of",
	algorithms.LeakyBucket{Shaping: true}.Name(): "it delays requests, and the rate limit service can only answer OK or OVER_LIMIT; use leaky_bucket",
}

// usesBurst are the algorithms with a burst (the others refuse one).
var usesBurst = map[string]bool{
	algorithms.TokenBucket{}.Name(): true,
	algorithms.LeakyBucket{}.Name(): true,
	algorithms.GCRA{}.Name():        true,
}

// algorithmNames lists the names a rule may give, in the core's order.
func algorithmNames() string {
	var names []string
	for _, a := range algorithms.All() {
		if _, refused := refusedAlgorithms[a.Name()]; !refused {
			names = append(names, a.Name())
		}
	}
	return strings.Join(names, ", ")
}

// algorithm reads an algorithm's name; nil (the default fixed window) when n is absent.
func (p *parser) algorithm(n *yaml.Node) algorithms.Algorithm {
	name, ok := p.str(n, "algorithm")
	if !ok || name == "" {
		if ok && !isNull(n) {
			p.errorf(n.Line, "algorithm must not be empty (one of %s)", algorithmNames())
		}
		return nil
	}
	if why, refused := refusedAlgorithms[name]; refused {
		p.errorf(n.Line, "algorithm %s cannot be used here: %s", name, why)
		return nil
	}
	for _, a := range algorithms.All() {
		if a.Name() == name {
			return a
		}
	}
	p.errorf(n.Line, "unknown algorithm %q (one of %s)", name, algorithmNames())
	return nil
}

// burst reads the burst of a window of algorithm a.
func (p *parser) burst(n *yaml.Node, a algorithms.Algorithm) int64 {
	if isNull(n) {
		return 0
	}
	var x int64
	if n.Kind != yaml.ScalarNode || n.Decode(&x) != nil || x < 1 || x > math.MaxUint32 {
		p.errorf(n.Line, "burst must be a whole number from 1 to %d, not %s", uint32(math.MaxUint32), kindName(n))
		return 0
	}
	if a == nil || !usesBurst[a.Name()] {
		name := "the default fixed window"
		if a != nil {
			name = a.Name()
		}
		p.errorf(n.Line, "burst is given, but %s has none (token_bucket, leaky_bucket and gcra have one)", name)
		return 0
	}
	return x
}

// unitOf reads a window's unit from its mapping's fields; ok is false when it is missing or
// unknown (reported).
func (p *parser) unitOf(f map[string]*yaml.Node, n *yaml.Node) (rlsv3.RateLimitResponse_RateLimit_Unit, bool) {
	text, _ := p.str(f["unit"], "unit")
	v, known := rlsv3.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(text)]
	if !known || v == int32(rlsv3.RateLimitResponse_RateLimit_UNKNOWN) {
		line := n.Line
		if f["unit"] != nil {
			line = f["unit"].Line
		}
		p.errorf(line, "invalid rate limit unit '%s' (one of second, minute, hour, day, week, month, year)", text)
		return 0, false
	}
	return rlsv3.RateLimitResponse_RateLimit_Unit(v), true
}

// windowsOf reads the algorithm, burst and also fields of rate_limit f into r.
func (p *parser) windowsOf(r *rule, f map[string]*yaml.Node) {
	r.algorithm = p.algorithm(f["algorithm"])
	r.burst = p.burst(f["burst"], r.algorithm)
	r.period = p.period(f["period"], r.algorithm)
	also := f["also"]
	extended := r.algorithm != nil || !isNull(also) || !isNull(f["period"])
	if r.unlimited && (extended || !isNull(f["burst"])) {
		p.errorf(r.line, "unlimited has no window: algorithm, burst, period and also do not go with it")
		return
	}
	if extended && r.perUnit == 0 && !r.unlimited {
		p.errorf(r.line, "requests_per_unit 0 refuses every request: give it without algorithm, period and also")
	}
	if isNull(also) {
		return
	}
	if also.Kind != yaml.SequenceNode || len(also.Content) == 0 {
		p.errorf(also.Line, "also must be a list of windows ({unit or period, requests_per_unit[, algorithm, burst]}), not %s", kindName(also))
		return
	}
	for _, e := range also.Content {
		ef := p.fields(e, "a window of also", "unit", "period", "requests_per_unit", "algorithm", "burst")
		if e.Kind != yaml.MappingNode {
			continue
		}
		w := window{}
		w.algorithm = p.algorithm(ef["algorithm"])
		w.burst = p.burst(ef["burst"], w.algorithm)
		ok := true
		if pn := ef["period"]; !isNull(pn) {
			if u := ef["unit"]; u != nil {
				p.errorf(u.Line, "%s", unitWithPeriod)
				ok = false
			}
			w.period = p.period(pn, w.algorithm)
			ok = ok && w.period != nil
			if w.period != nil {
				w.unit = reportUnit(w.period)
			}
		} else {
			w.unit, ok = p.unitOf(ef, e)
		}
		rpu := ef["requests_per_unit"]
		var x int64
		if isNull(rpu) || rpu.Kind != yaml.ScalarNode || rpu.Decode(&x) != nil || x < 1 || x > math.MaxUint32 {
			line, what := e.Line, "missing"
			if !isNull(rpu) {
				line, what = rpu.Line, kindName(rpu)
			}
			p.errorf(line, "requests_per_unit of a window of also must be a whole number from 1 to %d, not %s", uint32(math.MaxUint32), what)
			continue
		}
		w.perUnit = uint32(x)
		if ok {
			r.also = append(r.also, w)
		}
	}
}

// dumpWindows writes what Dump adds to a rule beyond the reference's fields: its algorithm,
// burst and other windows; "" for a plain rule.
func (r *rule) dumpWindows() string {
	if r.plain() {
		return ""
	}
	var b strings.Builder
	for i, w := range r.windows() {
		switch {
		case i > 0 && w.period != nil:
			fmt.Fprintf(&b, " also period=%s requests_per_unit=%d", w.period, w.perUnit)
		case i > 0:
			fmt.Fprintf(&b, " also unit=%s requests_per_unit=%d", w.unit, w.perUnit)
		case w.period != nil:
			fmt.Fprintf(&b, " period=%s", w.period)
		}
		if w.algorithm != nil {
			fmt.Fprintf(&b, " algorithm=%s", w.algorithm.Name())
		}
		if w.burst > 0 {
			fmt.Fprintf(&b, " burst=%d", w.burst)
		}
	}
	return b.String()
}

// bindingWindow returns the index of the window that decided d, a decision of a limiter of
// windows (policiesOf): the one Decision.Policy names, the closest to its limit.
func bindingWindow(d *ratelimit.Decision) int {
	i := slices.IndexFunc(d.Results(), func(r ratelimit.PolicyResult) bool { return r.Policy.Name == d.Policy.Name })
	return max(i, 0)
}
