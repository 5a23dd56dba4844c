package rules

import (
	"context"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"go.yaml.in/yaml/v3"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
)

// settles are the values of a rule's settle field, each with what it charges once the
// response has been sent.
var settles = map[string]func(cost.After) int64{
	"reported": cost.Reported,
	"written":  cost.Written,
}

// SettleFunc returns what a request of the rule is charged once its response has been sent,
// for ratelimit.ChargeAfter: cost.Reported for settle: reported, cost.Written for settle:
// written; nil for a rule without settle, which charges its Cost when it admits a request.
func (r *Rule) SettleFunc() func(cost.After) int64 { return settles[r.Settle] }

// settle reads a rule's estimate and settle fields (f holds the rule's fields) into r: both or
// neither, and not beside cost. It reports whether they are valid.
func (c *checker) settle(r *Rule, f map[string]*yaml.Node, path string) bool {
	estimate, settle := f["estimate"], f["settle"]
	if !present(estimate) && !present(settle) {
		return true
	}
	ok := true
	if present(settle) {
		if s, isText := c.text(settle, path+".settle"); !isText {
			ok = false
		} else if settles[s] == nil {
			c.add(settle, path+".settle", "%q is not a settle source; want reported (what the handler reported with cost.Report) or written (the bytes of the response body)", clip(s))
			ok = false
		} else {
			r.Settle = s
		}
	}
	if present(estimate) {
		if e, isInt := c.integer(estimate, path+".estimate"); !isInt {
			ok = false
		} else if e < 0 {
			c.add(estimate, path+".estimate", "%d is negative; an estimate is 0 or more (what each request holds while it runs)", e)
			ok = false
		} else {
			r.Estimate = e
		}
	}
	switch {
	case present(estimate) && !present(settle):
		c.add(estimate, path+".estimate", "an estimate without settle; give settle: reported or written, or write cost: for a cost known before the request runs")
		return false
	case present(settle) && !present(estimate):
		c.add(settle, path+".settle", "settle needs an estimate: what each request holds while it runs (estimate: 500)")
		return false
	case present(f["cost"]):
		c.add(f["cost"], path+".cost", "cost beside estimate and settle; a rule charged after the response holds its estimate while it runs: remove cost")
		return false
	}
	if ok {
		r.Cost = 0
	}
	return ok
}

// coreSettle has the core's NewGuard take the rule's policies, those of l, under ChargeAfter,
// as the engine's guard does, and reports its refusal (an in-flight, shaping or leasing policy
// cannot hold an estimate to settle) at at, the field of path that asked for it.
func (c *checker) coreSettle(l *ratelimit.Limiter, r *Rule, at *yaml.Node, path string) {
	if err := holdsFor(l, r); err != nil {
		c.add(deref(at), path, "%v", err)
	}
}

// holdsFor returns NewGuard's error of a guard over l that charges after the response as
// rule r does, or nil (also for a rule without settle).
func holdsFor(l *ratelimit.Limiter, r *Rule) error {
	if r.Settle == "" {
		return nil
	}
	_, err := ratelimit.NewGuard(l, ratelimit.ChargeAfter(r.SettleFunc()))
	return err
}

// overrideFits checks that the policies of override o, at the node policies of path, can
// hold the estimate of every rule with settle that o applies to, and admit the cost of every
// rule it applies to, as the rule's own must.
func (c *checker) overrideFits(o override, rules []Rule, policies *yaml.Node, path string) {
	if len(o.policies) == 0 {
		return
	}
	l, err := ratelimit.New(c.memoryStore(), o.policies...)
	if err != nil {
		return // reported where the override's policies were read
	}
	for i := range rules {
		r := &rules[i]
		if o.rule != "" && r.Name != o.rule || !keyedBy(r, o.client.part) {
			continue
		}
		if err := holdsFor(l, r); err != nil {
			c.add(deref(policies), path, "rule %q has settle: %s, so these policies hold its estimate: %v", r.Name, r.Settle, err)
			return
		}
		// The rule's cost is charged under the override's policies: one that none of them can
		// ever admit refuses the client for ever, as a rule's own would (see coreRule).
		if r.Cost > 1 {
			d, err := l.AllowN(context.Background(), "cost", r.Cost)
			if err == nil && !d.Allowed && d.RetryAfter == algorithms.Never {
				c.add(deref(policies), path, "rule %q costs %d a request, more than policy %q can ever admit at once (%d): every request of %s would be denied",
					r.Name, r.Cost, d.Policy.Name, d.Limit, o.client)
				return
			}
		}
	}
}
