package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/a7d3e0dd/ratelimit/rules"
)

// Middleware limits have no rules file: inspect and reset take their policies on the command
// line (-policy, repeated for a list of several windows) and the key they are limited by
// (-keyed-by, as a rules file writes it). The command makes a rule of them, "middleware", so
// that the rest is as for a rule: the state's keys depend on each policy's name, algorithm
// and window, and on the store's -prefix.

// middlewareHelp explains, in the usage of inspect and reset, how to give a middleware's limits.
const middlewareHelp = `A middleware's limits have no rule: give each of its policies with -policy, as the
application's ratelimit.Policy has them (name=; rate=, such as 100/min or the calendar's
1000/day@America/New_York, or limit= and window= or period=, such as month@UTC; burst=;
algorithm=, the Name of an algorithm of package algorithms, gcra when it names none and
fixed_window for a calendar period; shadow=true for a shadow policy; an unnamed policy is named as ratelimit.New names
it), one -policy for each window of a list, and the key the
middleware is limited by with -keyed-by (ip by default, as ratelimit.Middleware's). The
state's storage keys depend on each policy's name, algorithm and window (or period, and the
period the command runs in), and on -prefix.
`

// middlewareRule is the name of the rule that -policy makes.
const middlewareRule = "middleware"

// policyFlags are the repeated -policy values and the -keyed-by spec.
type policyFlags struct {
	policies []string
	keyedBy  string
}

func (p *policyFlags) String() string { return strings.Join(p.policies, " ") }

// Set adds one -policy.
func (p *policyFlags) Set(s string) error {
	p.policies = append(p.policies, s)
	return nil
}

// The kinds of value of a -policy's fields.
const (
	text = iota
	number
	boolean
)

// policyFields are the fields of a -policy, and the kind of value of each.
var policyFields = map[string]int{"name": text, "rate": text, "limit": number, "window": text, "period": text, "burst": number, "algorithm": text, "shadow": boolean}

// set returns the rules of the -policy flags: one rule, middlewareRule, keyed by -keyed-by.
func (p *policyFlags) set() (*rules.Set, error) {
	var policies []map[string]any
	for _, spec := range p.policies {
		pol := map[string]any{}
		for _, field := range strings.Split(spec, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(field), "=")
			kind, known := policyFields[k]
			switch {
			case !ok || !known:
				return nil, fmt.Errorf("-policy %q: %q is not name=, rate=, limit=, window=, period=, burst=, algorithm= or shadow=", spec, field)
			case kind == number:
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("-policy %q: %s %q is not a whole number", spec, k, v)
				}
				pol[k] = n
			case kind == boolean:
				b, err := strconv.ParseBool(v)
				if err != nil || v != "true" && v != "false" {
					return nil, fmt.Errorf("-policy %q: %s %q is not true or false", spec, k, v)
				}
				pol[k] = b
			default:
				pol[k] = v
			}
		}
		policies = append(policies, pol)
	}
	var key any = p.keyedBy
	if strings.HasPrefix(p.keyedBy, "[") {
		key = strings.Split(strings.Trim(p.keyedBy, "[] "), ",")
		for i, part := range key.([]string) {
			key.([]string)[i] = strings.TrimSpace(part)
		}
	}
	doc, err := json.Marshal(map[string]any{
		"version": "command-line",
		"rules":   []any{map[string]any{"name": middlewareRule, "key": key, "policies": policies}},
	})
	if err != nil {
		return nil, err
	}
	set, err := rules.Parse("-policy", doc, parseOptions...)
	var errs rules.Errors
	if errors.As(err, &errs) {
		// The document is the command's own: name the flag at fault, not a place in it
		// ("-policy.json:1: rules[0].policies[1].window" said nothing a user had written).
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = p.place(e.Field) + e.Msg
		}
		return nil, errors.New(strings.Join(msgs, "\n"))
	}
	return set, err
}

// place names the flag that a field of the document made by set comes from.
func (p *policyFlags) place(field string) string {
	if rest, ok := strings.CutPrefix(field, "rules[0].policies["); ok {
		if i, sub, ok := strings.Cut(rest, "]"); ok {
			if n, err := strconv.Atoi(i); err == nil && n >= 0 && n < len(p.policies) {
				if sub = strings.TrimPrefix(sub, "."); sub != "" {
					return fmt.Sprintf("-policy %q: %s: ", p.policies[n], sub)
				}
				return fmt.Sprintf("-policy %q: ", p.policies[n])
			}
		}
	}
	if field == "rules[0].policies" {
		return "-policy: "
	}
	if strings.HasPrefix(field, "rules[0].key") {
		return fmt.Sprintf("-keyed-by %q: ", p.keyedBy)
	}
	if field != "" {
		return field + ": "
	}
	return ""
}
