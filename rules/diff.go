package rules

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/a7d3e0dd/ratelimit"
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
// to: the rules added, removed and changed (match, tier, key, cost, estimate and settle, fail mode, and each
// policy's limit, window, burst, algorithm and shadow), in the order of to and then of from.
// A key written otherwise that reads the same parts in the same order (api_key and
// header:x-api-key) is no change: the identities it makes are the same.
// A nil from is no rules at all.
//
// The policies of a rule are told apart by their names as the limiter has them: a policy
// without a name is named by ratelimit.New from its algorithm, limit and window, such as
// gcra-100-per-1m, and its counts are kept under that name. So such a policy whose limit
// changes is a policy removed and another added, whose counts start from nothing: the line
// of the policy added names the one it replaces and says "counts restart". A policy's state
// is kept under its name, algorithm and window (ratelimit.StorageKey), so a policy whose
// window or algorithm changes starts from nothing too, and its changes are followed by
// "policies[name]: counts restart"; a limit, burst or shadow changed keeps the counts.
func Diff(from, to *Set) []Change {
	var before []Rule
	if from != nil {
		before = from.rules
	}
	n := &namer{}
	var changes []Change
	for _, r := range to.rules {
		i := slices.IndexFunc(before, func(b Rule) bool { return b.Name == r.Name })
		if i < 0 {
			changes = append(changes, Change{Rule: r.Name, Kind: "added", Details: []string{n.describeRule(&r)}})
			continue
		}
		if d := n.ruleDiff(&before[i], &r); len(d) > 0 {
			changes = append(changes, Change{Rule: r.Name, Kind: "changed", Details: d})
		}
	}
	for _, b := range before {
		if !slices.ContainsFunc(to.rules, func(r Rule) bool { return r.Name == b.Name }) {
			changes = append(changes, Change{Rule: b.Name, Kind: "removed", Details: []string{n.describeRule(&b)}})
		}
	}
	var fromAccess accessLists
	var fromOverrides []override
	if from != nil {
		fromAccess, fromOverrides = from.access, from.overrides
	}
	if d := accessDiff(&fromAccess, &to.access); len(d) > 0 {
		changes = append(changes, Change{Rule: "(access)", Kind: "changed", Details: d})
	}
	if d := overridesDiff(fromOverrides, to.overrides); len(d) > 0 {
		changes = append(changes, Change{Rule: "(overrides)", Kind: "changed", Details: d})
	}
	return changes
}

// accessDiff says what changes in the access lists: each network and client added (+) or
// removed (-), and the refusal's status and body.
func accessDiff(a, b *accessLists) []string {
	var out []string
	nets := func(field string, x, y []network) {
		has := func(l []network, p network) bool {
			return slices.ContainsFunc(l, func(q network) bool { return q.prefix == p.prefix })
		}
		for _, p := range y {
			if !has(x, p) {
				out = append(out, field+": + "+p.prefix.String())
			}
		}
		for _, p := range x {
			if !has(y, p) {
				out = append(out, field+": - "+p.prefix.String())
			}
		}
	}
	nets("allow", a.allow, b.allow)
	nets("deny", a.deny, b.deny)
	same := func(c client) func(client) bool {
		return func(d client) bool { return d.part == c.part && d.value == c.value }
	}
	for _, c := range b.denyClients {
		if !slices.ContainsFunc(a.denyClients, same(c)) {
			out = append(out, "deny_clients: + "+c.String())
		}
	}
	for _, c := range a.denyClients {
		if !slices.ContainsFunc(b.denyClients, same(c)) {
			out = append(out, "deny_clients: - "+c.String())
		}
	}
	if a.status != b.status {
		out = append(out, fmt.Sprintf("deny_status: %s → %s", statusText(a.status), statusText(b.status)))
	}
	if a.body != b.body {
		out = append(out, fmt.Sprintf("deny_body: %q → %q", a.body, b.body))
	}
	return out
}

func statusText(s int) string {
	if s == 0 {
		return "403 (default)"
	}
	return fmt.Sprint(s)
}

// overridesDiff says which overrides are added (+), removed (-) or changed (~), each named
// by its client and rule, in the order of the file.
func overridesDiff(a, b []override) []string {
	var out []string
	find := func(l []override, o override) int {
		return slices.IndexFunc(l, func(p override) bool {
			return p.client.part == o.client.part && p.client.value == o.client.value && p.rule == o.rule
		})
	}
	for _, o := range b {
		switch i := find(a, o); {
		case i < 0:
			out = append(out, "+ "+describeOverride(o))
		case describeOverride(a[i]) != describeOverride(o):
			out = append(out, "~ "+describeOverride(a[i])+" → "+overrideLimits(o))
		}
	}
	for _, o := range a {
		if find(b, o) < 0 {
			out = append(out, "- "+describeOverride(o))
		}
	}
	return out
}

// describeOverride says what an override gives whom: "api_key=acme on export: 10/1m".
func describeOverride(o override) string {
	on := "every rule keyed by " + o.client.spec
	if o.rule != "" {
		on = "rule " + o.rule
	}
	return o.client.String() + " on " + on + ": " + overrideLimits(o)
}

func overrideLimits(o override) string {
	if o.unlimited {
		return "unlimited"
	}
	var ps []string
	for _, p := range o.policies {
		ps = append(ps, describePolicy(p.Name, p.Limit, span(&p), p.Burst, p.Algorithm.Name(), p.Shadow))
	}
	return strings.Join(ps, ", ")
}

// namer finds the names of the policies of rules as the limiter has them.
type namer struct{ store ratelimit.Store }

// names returns the name of each policy of r as ratelimit.New has it: the name written, else
// the one New makes up, which a check of cost 0 reports (it charges nothing).
func (n *namer) names(r *Rule) []string {
	names := make([]string, len(r.Policies))
	for i, p := range r.Policies {
		names[i] = p.Name
	}
	if !slices.Contains(names, "") {
		return names
	}
	if n.store == nil {
		n.store = ratelimit.NewMemoryStore()
	}
	l, err := ratelimit.New(n.store, r.Policies...)
	if err != nil {
		return names // not a rule of Parse's, whose policies New takes
	}
	d, err := l.AllowN(context.Background(), "diff", 0)
	if err != nil || len(d.Results()) != len(names) {
		return names
	}
	for i, res := range d.Results() {
		names[i] = res.Policy.Name
	}
	return names
}

// describeRule says what a rule is, in one line: with its cost and fail mode when they are
// not the defaults (1, open), which a rule added or removed changes as much as its policies.
func (n *namer) describeRule(r *Rule) string {
	var policies []string
	for i, name := range n.names(r) {
		p := &r.Policies[i]
		policies = append(policies, describePolicy(name, p.Limit, span(p), p.Burst, p.Algorithm.Name(), p.Shadow))
	}
	match := quoted(r.Pattern)
	if r.Pattern == "" {
		match = "every request"
	}
	if r.Tier != "" {
		match += ", tier " + r.Tier
	}
	key := "key " + strings.Join(r.Key, "+")
	switch {
	case r.Settle != "":
		key += fmt.Sprintf(", estimate %d, settle %s", r.Estimate, r.Settle)
	case r.Cost != 1:
		key += fmt.Sprintf(", cost %d", r.Cost)
	}
	if r.FailClosed {
		key += ", fail closed"
	}
	return fmt.Sprintf("%s, %s, %s", match, key, strings.Join(policies, ", "))
}

// span returns what a policy counts over: its calendar period as a rate writes it after the
// slash ("day@America/New_York"), else its window ("1m0s").
func span(p *ratelimit.Policy) string {
	if p.Period != nil {
		return p.Period.String()
	}
	return p.Window.String()
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
func (n *namer) ruleDiff(a, b *Rule) []string {
	var d []string
	field := func(name string, x, y any) {
		if fmt.Sprint(x) != fmt.Sprint(y) {
			d = append(d, fmt.Sprintf("%s: %v → %v", name, x, y))
		}
	}
	field("match.pattern", quoted(a.Pattern), quoted(b.Pattern))
	field("tier", quoted(a.Tier), quoted(b.Tier))
	if !slices.Equal(keyParts(a.Key), keyParts(b.Key)) { // the same parts written otherwise change nothing
		field("key", strings.Join(a.Key, "+"), strings.Join(b.Key, "+"))
	}
	if a.Settle == "" && b.Settle == "" {
		field("cost", a.Cost, b.Cost)
	} else { // charged after the response: what is held, and how it is settled
		field("cost", costOf(a), costOf(b))
		field("estimate", estimateOf(a), estimateOf(b))
		field("settle", quoted(a.Settle), quoted(b.Settle))
	}
	field("fail", failMode(a.FailClosed), failMode(b.FailClosed))
	aNames, bNames := n.names(a), n.names(b)
	used := map[string]bool{}
	for j, name := range bNames {
		q := &b.Policies[j]
		i := slices.Index(aNames, name)
		if i < 0 {
			line := "policy added: " + describePolicy(name, q.Limit, span(q), q.Burst, q.Algorithm.Name(), q.Shadow)
			if old := replaced(a, aNames, bNames, q, used); old != "" {
				line += ", replacing " + old + ": counts restart (an unnamed policy is named from its limit; name it to keep its counts)"
			}
			d = append(d, line)
			continue
		}
		p := &a.Policies[i]
		at := "policies[" + name + "]."
		field(at+"limit", p.Limit, q.Limit)
		if p.Period == nil && q.Period == nil {
			field(at+"window", p.Window, q.Window)
		} else { // a calendar period, or a window that became one or the reverse
			field(at+"period", span(p), span(q))
		}
		field(at+"burst", p.Burst, q.Burst)
		field(at+"algorithm", p.Algorithm.Name(), q.Algorithm.Name())
		field(at+"shadow", p.Shadow, q.Shadow)
		if !sameState(*p, *q, name) {
			d = append(d, "policies["+name+"]: counts restart (a policy's state is kept under its name, algorithm and window or period)")
		}
	}
	for i, name := range aNames {
		if !slices.Contains(bNames, name) {
			p := &a.Policies[i]
			d = append(d, "policy removed: "+describePolicy(name, p.Limit, span(p), p.Burst, p.Algorithm.Name(), p.Shadow))
		}
	}
	return d
}

// replaced returns the name of the unnamed policy of a, gone from b, that q, an unnamed policy
// added to b, replaces: one of the same algorithm and window, whose limit or burst made it
// another name; "" when there is none, or q has a name. used are the names already replaced.
func replaced(a *Rule, aNames, bNames []string, q *ratelimit.Policy, used map[string]bool) string {
	if q.Name != "" {
		return ""
	}
	for i, name := range aNames {
		p := &a.Policies[i]
		if p.Name == "" && !used[name] && !slices.Contains(bNames, name) &&
			span(p) == span(q) && p.Algorithm.Name() == q.Algorithm.Name() {
			used[name] = true
			return name
		}
	}
	return ""
}

// sameState reports whether policies p and q, both named name by the limiter, keep their
// state under the same storage key, so that the counts of one carry over to the other.
func sameState(p, q ratelimit.Policy, name string) bool {
	p.Name, q.Name = name, name
	return ratelimit.StorageKey("", "diff", p, false) == ratelimit.StorageKey("", "diff", q, false)
}

// keyParts returns what each part of a key reads, in order (see partID).
func keyParts(key []string) []string {
	parts := make([]string, len(key))
	for i, spec := range key {
		parts[i] = partID(spec)
	}
	return parts
}

// costOf is a rule's cost for a diff: "(none)" for a rule with settle, which holds its
// estimate instead.
func costOf(r *Rule) string {
	if r.Settle != "" {
		return "(none)"
	}
	return fmt.Sprint(r.Cost)
}

// estimateOf is a rule's estimate for a diff: "(none)" for a rule without settle.
func estimateOf(r *Rule) string {
	if r.Settle == "" {
		return "(none)"
	}
	return fmt.Sprint(r.Estimate)
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
