package rules

import (
	"context"
	"fmt"
	"strings"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"go.yaml.in/yaml/v3"
)

// coreFields maps the field a ratelimit.New error names ("Limit is 0; ...") to the field of
// the file that holds it.
var coreFields = []struct{ word, field string }{
	{": Limit ", "limit"},
	{": Window ", "window"},
	{": Period", "period"},
	{": Burst ", "burst"},
	{": Name ", "name"},
}

// corePolicy has ratelimit.New validate one policy, and reports its error at the field it
// names (at its rate when the rate gave that field, at the policy when the file does not hold
// it). A shadow policy is validated
// as if it were enforced: New refuses a limiter of shadow policies alone, which is a question
// for the whole rule (coreRule).
func (c *checker) corePolicy(p ratelimit.Policy, n *yaml.Node, fields map[string]*yaml.Node, path string) bool {
	p.Shadow = false
	_, err := ratelimit.New(c.memoryStore(), p)
	if err == nil {
		return true
	}
	at, field := deref(n), path
	for _, cf := range coreFields {
		if !strings.Contains(err.Error(), cf.word) {
			continue
		}
		name := cf.field
		if fields[name] == nil && cf.field != "name" && cf.field != "burst" {
			name = "rate" // the limit, the window and the period of a rate
		}
		if fields[name] != nil {
			at, field = deref(fields[name]), path+"."+name
			break
		}
	}
	c.add(at, field, "%v", err)
	return false
}

// coreRule has ratelimit.New validate the rule's policies together (at least one enforced, no
// two of the same name, default names included), and refuses a cost that no request could
// ever pay: one above the capacity of an enforced policy, which the limiter denies for ever.
// A rule with settle must have policies that can hold its estimate (see coreSettle).
// policies, cost and settle are the nodes of those fields; cost and settle are nil when absent.
func (c *checker) coreRule(r *Rule, policies, cost, settle *yaml.Node, path string) {
	l, err := ratelimit.New(c.memoryStore(), r.Policies...)
	if err != nil {
		c.add(deref(policies), path+".policies", "%v", err)
		return
	}
	c.coreSettle(l, r, settle, path+".settle")
	if r.Cost <= 1 {
		return // every policy admits at least 1
	}
	d, err := l.AllowN(context.Background(), "cost", r.Cost)
	if err == nil && !d.Allowed && d.RetryAfter == algorithms.Never {
		c.add(deref(cost), path+".cost", "%d is more than policy %q can ever admit at once (%d): every request would be denied",
			r.Cost, d.Policy.Name, d.Limit)
	}
}

// memoryStore returns the store of the limiters that validate the policies of the file. They
// share it: New only asks it what it is, and the one check they make (see coreRule) depends on
// no state.
func (c *checker) memoryStore() ratelimit.Store {
	if c.store == nil {
		c.store = ratelimit.NewMemoryStore()
	}
	return c.store
}

// compare checks the rules against each other: names apart, and no two rules for the same
// pattern and tier.
func (c *checker) compare(rules []Rule, where []written) {
	names := map[string]int{}
	scopes := map[[2]string]int{}
	for i := range rules {
		r, w := &rules[i], &where[i]
		if w.name != nil && r.Name != "" {
			if j, dup := names[r.Name]; dup {
				c.add(w.name, fmt.Sprintf("rules[%d].name", i), "%q is also the name of rules[%d] (line %d)", r.Name, j, where[j].name.Line)
			} else {
				names[r.Name] = i
			}
		}
		if (w.pattern != nil && r.Pattern == "") || (w.tier != nil && r.Tier == "") {
			continue // not read: already reported
		}
		scope := [2]string{r.Pattern, r.Tier}
		if j, dup := scopes[scope]; dup {
			at, field := w.rule, fmt.Sprintf("rules[%d]", i)
			if w.pattern != nil {
				at, field = w.pattern, field+".match.pattern"
			}
			c.add(at, field, "rules[%d] (line %d) already has %s; each pattern and tier may have one rule",
				j, where[j].rule.Line, describeScope(r.Pattern, r.Tier))
		} else {
			scopes[scope] = i
		}
	}
}

// describeScope names a pattern and tier for a message.
func describeScope(pattern, tier string) string {
	s := "no pattern"
	if pattern != "" {
		s = fmt.Sprintf("pattern %q", pattern)
	}
	if tier != "" {
		return s + fmt.Sprintf(" and tier %q", tier)
	}
	return s + " and no tier"
}
