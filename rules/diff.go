package rules

import (
	"github.com/a7d3e0dd/ratelimit"

	"fmt"
	"slices"
	"strings"
)

// Change is one difference between two versions of rules, rule by rule (see [Diff]).
type Change struct {
	// Rule is the name of the rule.
	Rule string
	// Kind is "added", "removed" or "changed".
	Kind string
	// Details say what changed, one entry per field, such as
	// `policies[per-minute].limit: 100 → 200`; for a rule added or removed, what it is.
	Details []string
}

// String returns the change as one line: "+ free: ...", "- old: ..." or "~ search: ...".
func (c Change) String() string {
	mark := map[string]string{"added": "+", "removed": "-", "changed": "~"}[c.Kind]
	return mark + " " + c.Rule + ": " + strings.Join(c.Details, "; ")
}

// Diff returns what changes, rule by rule, when the rules of from are replaced by those of
// to: the rules added, removed and changed (match, tier, key, cost, fail mode, and each
// policy's limit, window, burst, algorithm and shadow), in the order of to and then of from.
// A nil from is no rules at all.
func Diff(from, to *Set) []Change {
	var before []Rule
	if from != nil {
		before = from.rules
	}
	var changes []Change
	for _, r := range to.rules {
		i := slices.IndexFunc(before, func(b Rule) bool { return b.Name == r.Name })
		if i < 0 {
			changes = append(changes, Change{Rule: r.Name, Kind: "added", Details: []string{describeRule(&r)}})
			continue
		}
		if d := ruleDiff(&before[i], &r); len(d) > 0 {
			changes = append(changes, Change{Rule: r.Name, Kind: "changed", Details: d})
		}
	}
	for _, b := range before {
		if !slices.ContainsFunc(to.rules, func(r Rule) bool { return r.Name == b.Name }) {
			changes = append(changes, Change{Rule: b.Name, Kind: "removed", Details: []string{describeRule(&b)}})
		}
	}
	return changes
}

// describeRule says what a rule is, in one line.
func describeRule(r *Rule) string {
	var policies []string
	for _, p := range r.Policies {
		policies = append(policies, describePolicy(p.Name, p.Limit, p.Window.String(), p.Burst, p.Algorithm.Name(), p.Shadow))
	}
	match := quoted(r.Pattern)
	if r.Pattern == "" {
		match = "every request"
	}
	if r.Tier != "" {
		match += ", tier " + r.Tier
	}
	return fmt.Sprintf("%s, key %s, %s", match, strings.Join(r.Key, "+"), strings.Join(policies, ", "))
}

func describePolicy(name string, limit int64, window string, burst int64, algorithm string, shadow bool) string {
	s := fmt.Sprintf("%s %d/%s %s", name, limit, window, algorithm)
	if burst > 0 {
		s += fmt.Sprintf(" burst %d", burst)
	}
	if shadow {
		s += " (shadow)"
	}
	return s
}

// ruleDiff lists what differs between two versions of one rule.
func ruleDiff(a, b *Rule) []string {
	var d []string
	field := func(name string, x, y any) {
		if fmt.Sprint(x) != fmt.Sprint(y) {
			d = append(d, fmt.Sprintf("%s: %v → %v", name, x, y))
		}
	}
	field("match.pattern", quoted(a.Pattern), quoted(b.Pattern))
	field("tier", quoted(a.Tier), quoted(b.Tier))
	field("key", strings.Join(a.Key, "+"), strings.Join(b.Key, "+"))
	field("cost", a.Cost, b.Cost)
	field("fail", failMode(a.FailClosed), failMode(b.FailClosed))
	for _, q := range b.Policies {
		i := slices.IndexFunc(a.Policies, func(p ratelimit.Policy) bool { return p.Name == q.Name })
		if i < 0 {
			d = append(d, "policy added: "+describePolicy(q.Name, q.Limit, q.Window.String(), q.Burst, q.Algorithm.Name(), q.Shadow))
			continue
		}
		p := a.Policies[i]
		at := "policies[" + q.Name + "]."
		field(at+"limit", p.Limit, q.Limit)
		field(at+"window", p.Window, q.Window)
		field(at+"burst", p.Burst, q.Burst)
		field(at+"algorithm", p.Algorithm.Name(), q.Algorithm.Name())
		field(at+"shadow", p.Shadow, q.Shadow)
	}
	for _, p := range a.Policies {
		if !slices.ContainsFunc(b.Policies, func(q ratelimit.Policy) bool { return q.Name == p.Name }) {
			d = append(d, "policy removed: "+describePolicy(p.Name, p.Limit, p.Window.String(), p.Burst, p.Algorithm.Name(), p.Shadow))
		}
	}
	return d
}

func quoted(s string) string {
	if s == "" {
		return "(none)"
	}
	return fmt.Sprintf("%q", s)
}

func failMode(closed bool) string {
	if closed {
		return "closed"
	}
	return "open"
}
