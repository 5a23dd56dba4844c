package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/calendar"
)

// The fields of each mapping of the schema; any other field is an error.
var (
	documentFields = []string{"version", "allow_empty", "access", "rules", "overrides"}
	ruleFields     = []string{"name", "match", "key", "tier", "cost", "estimate", "settle", "fail", "policies"}
	matchFields    = []string{"pattern"}
	policyFields   = []string{"name", "algorithm", "rate", "limit", "window", "period", "burst", "shadow"}
)

// written is where a rule's values were written, for the checks that compare rules.
type written struct {
	rule                *yaml.Node // the rule's mapping
	name, pattern, tier *yaml.Node // their values; nil when absent
}

// document reads the document's mapping into a Set, reporting every problem on the way.
func (c *checker) document(n *yaml.Node) *Set {
	f := c.fields(n, "", documentFields)
	if f == nil {
		return nil
	}
	s := &Set{}
	if v := f["version"]; present(v) {
		s.version, s.versioned = c.label(v, "version")
	}
	allowEmpty := false
	if v := f["allow_empty"]; present(v) {
		allowEmpty, _ = c.boolean(v, "allow_empty")
	}
	list := f["rules"]
	if !present(list) {
		if allowEmpty && list == nil {
			c.add(deref(n), "rules", "required; write rules: [] beside allow_empty: true for a document without rules")
			return nil
		}
		c.missing(n, list, "rules")
		return nil
	}
	items, ok := c.items(list, "rules", MaxRules)
	c.empty(list, f["allow_empty"], ok, len(items), allowEmpty)
	s.rules = make([]Rule, 0, len(items))
	where := make([]written, 0, len(items))
	for i, item := range items {
		r, w := c.rule(item, fmt.Sprintf("rules[%d]", i))
		s.rules = append(s.rules, r)
		where = append(where, w)
	}
	c.compare(s.rules, where)
	s.index(c, where)
	if v := f["access"]; present(v) {
		s.access = c.access(v)
	}
	if v := f["overrides"]; present(v) {
		s.overrides = c.overrides(v, s.rules)
	}
	c.deniedOverrides(s)
	if len(c.errs) == 0 {
		c.clientKeys(s)
	}
	s.warnings = c.warnings
	if len(c.errs) > 0 {
		return nil
	}
	s.digest = contentVersion(s.rules, &s.access, s.overrides)
	if s.version == "" {
		s.version = s.digest
	}
	return s
}

// empty checks that a document holds rules, or says with allow_empty: true that it means to
// hold none (which stops limiting every request), and that allow_empty: true is not left
// beside rules, where it would let a later accident through. list is the rules' value, flag
// allow_empty's; listed is whether list is a list of n items.
func (c *checker) empty(list, flag *yaml.Node, listed bool, n int, allowEmpty bool) {
	switch {
	case listed && n == 0 && !allowEmpty:
		c.addErr(list, "rules", ErrEmptyRules, "no rules: every request would go unlimited; write allow_empty: true at the top of the document if that is meant")
	case listed && n > 0 && allowEmpty:
		rules := "rules"
		if n == 1 {
			rules = "rule"
		}
		c.add(flag, "allow_empty", "true, but the document has %d %s; remove allow_empty, which is for a document without rules", n, rules)
	}
}

// rule reads one rule. What it cannot read it reports and leaves zero.
func (c *checker) rule(n *yaml.Node, path string) (Rule, written) {
	var r Rule
	w := written{rule: deref(n)}
	f := c.fields(n, path, ruleFields)
	if f == nil {
		return r, w
	}
	if v := f["name"]; present(v) {
		w.name = deref(v)
		if r.Name, _ = c.text(v, path+".name"); r.Name != "" && !validName(r.Name) {
			c.add(v, path+".name", "%q is not a lower-case token of at most 64 bytes: a-z first, then a-z, 0-9, '_', '-', '.'", clip(r.Name))
		}
	} else {
		c.missing(n, v, path+".name")
	}
	if m := f["match"]; present(m) {
		if mf := c.fields(m, path+".match", matchFields); present(mf["pattern"]) {
			w.pattern = deref(mf["pattern"])
			r.Pattern, _ = c.text(mf["pattern"], path+".match.pattern")
			if r.Pattern == "" && w.pattern.ShortTag() == "!!str" {
				c.add(w.pattern, path+".match.pattern", "empty; leave out match to match every request")
			}
		}
	}
	if v := f["key"]; present(v) {
		r.Key, r.key = c.key(v, path+".key", r.Pattern)
	} else {
		c.missing(n, v, path+".key")
	}
	if v := f["tier"]; present(v) {
		w.tier = deref(v)
		r.Tier, _ = c.label(v, path+".tier")
	}
	r.Cost = 1
	if v := f["cost"]; present(v) {
		if cost, ok := c.integer(v, path+".cost"); ok {
			if cost < 0 {
				c.add(v, path+".cost", "%d is negative; a cost is 0 (charge nothing) or more", cost)
			}
			r.Cost = cost
		}
	}
	settles := c.settle(&r, f, path)
	if v := f["fail"]; present(v) {
		switch mode, ok := c.text(v, path+".fail"); {
		case !ok:
		case mode == "closed":
			r.FailClosed = true
		case mode != "open":
			c.add(v, path+".fail", "%q is not a fail mode; want open or closed", clip(mode))
		}
	}
	if v := f["policies"]; present(v) {
		if c.policies(&r, v, path+".policies") && r.Cost >= 0 && settles {
			c.coreRule(&r, v, f["cost"], f["settle"], path)
		}
	} else {
		c.missing(n, v, path+".policies")
	}
	return r, w
}

// key reads a rule's key: one part, or a list of one to maxKeyParts parts. pattern is the
// rule's match pattern, which the part "route" keys by.
func (c *checker) key(n *yaml.Node, path, pattern string) ([]string, ratelimit.KeyFunc) {
	n = deref(n)
	items := []*yaml.Node{n}
	single := n.Kind != yaml.SequenceNode
	if !single {
		var ok bool
		if items, ok = c.items(n, path, maxKeyParts); !ok {
			return nil, nil
		}
		if len(items) == 0 {
			c.add(n, path, "empty; give at least one of ip, route, method, user, api_key or header:<Name>")
			return nil, nil
		}
	}
	specs := make([]string, 0, len(items))
	fns := make([]ratelimit.KeyFunc, 0, len(items))
	seen := map[string]int{}
	ok := true
	for i, item := range items {
		p := path
		if !single {
			p = fmt.Sprintf("%s[%d]", path, i)
		}
		spec, isText := c.text(item, p)
		if !isText {
			ok = false
			continue
		}
		specs = append(specs, spec)
		fn, id, err := keyPart(spec, pattern, &c.opts)
		if err != nil {
			c.add(item, p, "%v", err)
			ok = false
			continue
		}
		if j, dup := seen[id]; dup {
			c.add(item, p, "%q is the same part as %s[%d]; give each part once", spec, path, j)
			ok = false
			continue
		}
		seen[id] = i
		fns = append(fns, fn)
	}
	if !ok {
		return specs, nil
	}
	return specs, joinKeys(fns)
}

// policies reads a rule's policies and has the core validate each; ok is false when one
// could not be read or is not valid.
func (c *checker) policies(r *Rule, n *yaml.Node, path string) (ok bool) {
	items, ok := c.items(n, path, maxPolicies)
	if !ok {
		return false
	}
	if len(items) == 0 {
		c.add(n, path, "empty; a rule needs at least one policy")
		return false
	}
	r.Policies = make([]ratelimit.Policy, 0, len(items))
	names := map[string]int{}
	for i, item := range items {
		p := fmt.Sprintf("%s[%d]", path, i)
		pol, fields, read := c.policy(item, p)
		r.Policies = append(r.Policies, pol)
		if !read {
			ok = false
			continue
		}
		if pol.Name != "" {
			if j, dup := names[pol.Name]; dup {
				c.add(fields["name"], p+".name", "%q is also the name of %s[%d] (line %d); give the policies of a rule names apart", pol.Name, path, j, deref(items[j]).Line)
				ok = false
				continue
			}
			names[pol.Name] = i
		}
		if !c.corePolicy(pol, item, fields, p) {
			ok = false
		}
	}
	return ok
}

// policy reads one policy; read is false when something could not be read.
func (c *checker) policy(n *yaml.Node, path string) (p ratelimit.Policy, f map[string]*yaml.Node, read bool) {
	f = c.fields(n, path, policyFields)
	if f == nil {
		return p, nil, false
	}
	before := len(c.errs)
	if v := f["name"]; present(v) {
		p.Name, _ = c.text(v, path+".name")
	}
	var named algorithms.Algorithm // the algorithm written, nil when none is
	if v := f["algorithm"]; present(v) {
		if name, ok := c.text(v, path+".algorithm"); ok {
			if a, known := algorithmNamed(name); known {
				named = a
			} else {
				c.add(v, path+".algorithm", "unknown algorithm %q; want one of %s", clip(name), strings.Join(algorithmNames(), ", "))
			}
		}
	}
	if v := f["rate"]; present(v) {
		// "100/min": the limit and the window in one, read as ratelimit.ParsePolicy reads it;
		// "1000/day@America/New_York": the limit and a calendar period.
		switch {
		case present(f["period"]):
			c.add(v, path+".rate", "give rate, or limit and period, not both")
		case present(f["limit"]) || present(f["window"]):
			c.add(v, path+".rate", "give rate, or limit and window, not both")
		default:
			if text, ok := c.text(v, path+".rate"); ok {
				if r, err := ratelimit.ParsePolicy(text); err != nil {
					c.add(v, path+".rate", "%s", strings.TrimPrefix(err.Error(), "ratelimit: "))
				} else {
					p.Limit, p.Window, p.Period = r.Limit, r.Window, r.Period
				}
			}
		}
	} else {
		if v := f["limit"]; present(v) {
			p.Limit, _ = c.integer(v, path+".limit")
		} else {
			c.missingOr(n, v, path+".limit", "rate")
		}
		switch w, per := f["window"], f["period"]; {
		case present(w) && present(per):
			c.add(per, path+".period", "give window or period, not both: a window is a duration (1h, 1d), a period is the calendar's (day@UTC)")
		case present(per):
			p.Period, _ = c.period(per, path+".period")
		case present(w):
			p.Window, _ = c.duration(w, path+".window")
		default:
			c.missingOr(n, w, path+".window", "period, or rate")
		}
	}
	c.algorithm(&p, named, f["algorithm"], path)
	if v := f["burst"]; present(v) {
		p.Burst, _ = c.integer(v, path+".burst")
	}
	if v := f["shadow"]; present(v) {
		p.Shadow, _ = c.boolean(v, path+".shadow")
	}
	return p, f, len(c.errs) == before
}

// algorithm sets p's algorithm: named, the one written at n, else the default, which for a
// calendar policy (a Period) is fixed_window, the one algorithm that counts calendar periods.
func (c *checker) algorithm(p *ratelimit.Policy, named algorithms.Algorithm, n *yaml.Node, path string) {
	switch {
	case p.Period == nil && named == nil:
		p.Algorithm = defaultAlgorithm
	case p.Period == nil:
		p.Algorithm = named
	case named == nil:
		p.Algorithm = calendarAlgorithm
	case named.Name() != calendarAlgorithm.Name():
		c.add(n, path+".algorithm", "%s cannot count calendar periods; the period %s is counted by %s from each period's start to its end: leave algorithm out (or write %s), or give a window",
			named.Name(), p.Period, calendarAlgorithm.Name(), calendarAlgorithm.Name())
	default:
		p.Algorithm = named
	}
}

// period reads a calendar period as calendar.ParsePeriod does: day@UTC,
// week(monday)@Europe/Berlin, month@UTC~2026-01-31. An anchor after now is refused by the
// core's check of the policy (corePolicy), on the clock of its store.
func (c *checker) period(n *yaml.Node, path string) (*calendar.Period, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		c.add(n, path, "want a calendar period such as day@UTC, week(monday)@Europe/Berlin or month@UTC~2026-01-31, got %s", describe(n))
		return nil, false
	}
	p, err := calendar.ParsePeriod(n.Value, anyAnchor)
	if err != nil {
		c.add(n, path, "%v", err)
		return nil, false
	}
	return &p, true
}

// anyAnchor is the "now" a period is read at: every anchor is before it, so that the core's
// check, on its store's clock, is the one that refuses an anchor in the future.
var anyAnchor = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// fields checks that n is a mapping of the known fields, each given once, and returns their
// values; nil after reporting that n is not a mapping.
func (c *checker) fields(n *yaml.Node, path string, known []string) map[string]*yaml.Node {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		c.add(n, path, "want a mapping of %s, got %s", strings.Join(known, ", "), describe(n))
		return nil
	}
	out := make(map[string]*yaml.Node, len(known))
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if k.Kind != yaml.ScalarNode {
			c.add(k, path, "a field name must be text, got %s", describe(k))
			continue
		}
		p := k.Value
		if path != "" {
			p = path + "." + k.Value
		}
		if first, dup := seen[k.Value]; dup {
			c.add(k, p, "given twice (first at line %d)", first.Line)
			continue
		}
		seen[k.Value] = k
		if !slices.Contains(known, k.Value) {
			c.add(k, clip(p), "unknown field; want %s", strings.Join(known, ", "))
			continue
		}
		out[k.Value] = n.Content[i+1]
	}
	return out
}

// items checks that n is a list of at most max items and returns them; false after
// reporting.
func (c *checker) items(n *yaml.Node, path string, max int) ([]*yaml.Node, bool) {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		c.add(n, path, "want a list, got %s", describe(n))
		return nil, false
	}
	if len(n.Content) > max {
		c.add(n, path, "%d items; at most %d are allowed", len(n.Content), max)
		return nil, false
	}
	return n.Content, true
}

// missing reports a required field: absent from mapping m, or there without a value (v).
func (c *checker) missing(m, v *yaml.Node, path string) {
	if v != nil {
		c.add(deref(v), path, "required, and empty")
		return
	}
	c.add(deref(m), path, "required")
}

// missingOr reports a required field absent or empty, which another field could replace.
func (c *checker) missingOr(m, v *yaml.Node, path, other string) {
	if v != nil {
		c.add(deref(v), path, "required, and empty")
		return
	}
	c.add(deref(m), path, "required (or %s)", other)
}

// text reads a string.
func (c *checker) text(n *yaml.Node, path string) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		c.add(n, path, "want text, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

// label reads a version or a tier: any scalar's text, such as 2026-11-23 or 3, of at most
// maxLabel printable bytes.
func (c *checker) label(n *yaml.Node, path string) (string, bool) {
	n = deref(n)
	switch {
	case n.Kind != yaml.ScalarNode:
		c.add(n, path, "want text, got %s", describe(n))
	case n.Value == "" || strings.TrimSpace(n.Value) != n.Value:
		c.add(n, path, "%q is empty or starts or ends with a space", clip(n.Value))
	case len(n.Value) > maxLabel:
		c.add(n, path, "%d bytes; at most %d are allowed", len(n.Value), maxLabel)
	case strings.IndexFunc(n.Value, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0:
		c.add(n, path, "%q holds a control character", clip(n.Value))
	default:
		return n.Value, true
	}
	return "", false
}

// integer reads an integer.
func (c *checker) integer(n *yaml.Node, path string) (int64, bool) {
	n = deref(n)
	var v int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		if n.ShortTag() == "!!float" && strings.Trim(n.Value, "+-0123456789") == "" {
			c.add(n, path, "%s is out of range", clip(n.Value)) // YAML's type of a large integer
		} else {
			c.add(n, path, "want an integer, got %s", describe(n))
		}
		return 0, false
	}
	if octal(n.Value) {
		c.add(n, path, "%s starts with 0, which YAML reads as an octal number; write it without the 0 (or 0o for octal)", clip(n.Value))
		return 0, false
	}
	if err := n.Decode(&v); err != nil {
		c.add(n, path, "%s is out of range", clip(n.Value))
		return 0, false
	}
	return v, true
}

// octal reports whether s is an integer of digits written with a leading zero, such as 010,
// which the YAML parser reads as octal (8), as YAML 1.1 did; YAML 1.2 reads it as decimal (10),
// and JSON does not allow it.
func octal(s string) bool {
	s = strings.TrimLeft(s, "+-")
	return len(s) > 1 && s[0] == '0' && strings.Trim(s, "0123456789_") == ""
}

// duration reads a duration as ratelimit.ParseDuration does: a Go duration such as 1s or
// 1m30s, which may start with whole days (1d, 7d12h).
func (c *checker) duration(n *yaml.Node, path string) (time.Duration, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		c.add(n, path, "want a duration such as 1s, 1m30s or 1d, got %s", describe(n))
		return 0, false
	}
	d, err := ratelimit.ParseDuration(n.Value)
	switch {
	case err != nil && strings.Contains(err.Error(), "out of range"):
		c.add(n, path, "%q is out of range; a window is at most 366 days", clip(n.Value))
		return 0, false
	case err != nil:
		c.add(n, path, "%q is not a duration (e.g. 1s, 1m30s, 1d)", clip(n.Value))
		return 0, false
	}
	return d, true
}

// boolean reads true or false.
func (c *checker) boolean(n *yaml.Node, path string) (bool, bool) {
	n = deref(n)
	var v bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		c.add(n, path, "want true or false, got %s", describe(n))
		return false, false
	}
	return v, true
}

// deref returns the node an alias stands for.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; i < 16 && n != nil && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

// present reports whether a field has a value: it is there and not null.
func present(n *yaml.Node) bool {
	n = deref(n)
	return n != nil && !(n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// describe names a value for a message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!str" {
			return strconv.Quote(clip(n.Value))
		}
		if n.ShortTag() == "!!null" {
			return "nothing"
		}
		return clip(n.Value)
	}
	return "an alias"
}

// validName reports whether s is a lower-case token of at most 64 bytes, a-z first, then a-z,
// 0-9, '_', '-', '.': the rule of ratelimit.Policy.Name, which names rules too.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
