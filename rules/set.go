package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/a7d3e0dd/ratelimit"
)

// Set is a parsed and validated rules document. It does not change after [Parse], and is safe
// for concurrent use.
type Set struct {
	version   string
	versioned bool   // the document gave its version
	digest    string // a hash of what the rules say: two Sets of the same digest limit alike
	rules     []Rule
	access    accessLists // the access field: networks and clients never limited, or refused
	overrides []override  // the clients whose limits differ
	warnings  Errors      // what is valid but does nothing

	mux      *http.ServeMux    // every distinct pattern, registered to find the one a request matches
	patterns map[string]*scope // the rules of each pattern
	// fold has every pattern with its path in lower case, for the requests of a router that
	// compares paths so (see match); folded names each one's pattern as written.
	fold     *http.ServeMux
	folded   map[string]string
	anywhere scope // the rules without a pattern
}

// Rule is one rule of a document: the policies a request gets when the rule matches it, and
// what its identity is.
type Rule struct {
	// Name is the rule's name, unique in its document.
	Name string
	// Pattern is the net/http ServeMux pattern of the requests the rule is for, such as
	// "GET /search/{q}"; "" is every request.
	Pattern string
	// Tier is the tier of the requests the rule is for; "" is every tier.
	Tier string
	// Key is the rule's key as written, such as [api_key] or [ip route].
	Key []string
	// Cost is what each request costs (default 1); 0 for a rule with Settle.
	Cost int64
	// Estimate is, for a rule with Settle, what each request is admitted against and holds
	// while it runs (ratelimit.WithCost of its guard; the core clamps it to half the least
	// capacity of an enforced policy, and to at least 1).
	Estimate int64
	// Settle is, for a rule whose requests cost what is known only once their response has
	// been sent, what they are charged then ([Rule.SettleFunc], ratelimit.ChargeAfter):
	// "reported" (what the handler reported with cost.Report) or "written" (the bytes of the
	// response body). "" for a rule that charges Cost when it admits a request.
	Settle string
	// FailClosed is true for fail: closed: refuse requests while the store is unavailable.
	// False (the default, fail: open) lets them through.
	FailClosed bool
	// Policies are the rule's policies, each valid for ratelimit.New; the Algorithm is set
	// (GCRA when the file names none) and an empty Name is left for New to fill in.
	Policies []ratelimit.Policy

	key ratelimit.KeyFunc
}

// KeyFunc returns the function that finds the identity a request is limited by under the
// rule: the core's key function of each part of Key, joined with ratelimit.KeyJoin when
// there are several. It is nil for a Rule that [Parse] did not make.
func (r *Rule) KeyFunc() ratelimit.KeyFunc { return r.key }

// clone returns a copy of r that shares nothing with it.
func (r *Rule) clone() Rule {
	c := *r
	c.Key = slices.Clone(r.Key)
	c.Policies = slices.Clone(r.Policies)
	for i, p := range c.Policies {
		if p.Period != nil {
			period := *p.Period
			c.Policies[i].Period = &period
		}
	}
	return c
}

// Version returns the document's version: its version field, or when there is none a short
// hash of the rules it holds (so comments, layout and the choice of YAML or JSON do not change
// it, and any change to a rule does).
func (s *Set) Version() string { return s.version }

// Versioned reports whether the document gave its version in a version: field. When it did
// not, Version is a hash of its rules: it tells two documents apart, but not which is newer,
// so [Push] refuses such a document ([ErrNoVersion]); a file read by [Open] and
// [Engine.WatchFile] needs none.
func (s *Set) Versioned() bool { return s.versioned }

// Rules returns a copy of the rules, in the order of the document.
func (s *Set) Rules() []Rule {
	out := make([]Rule, len(s.rules))
	for i := range s.rules {
		out[i] = s.rules[i].clone()
	}
	return out
}

// contentVersion returns a hash of what the rules, the access lists and the overrides say,
// as 12 hexadecimal digits.
func contentVersion(rules []Rule, a *accessLists, overrides []override) string {
	type policy struct {
		Name, Algorithm      string
		Limit, Window, Burst int64
		Shadow               bool
		Period               string `json:",omitempty"` // absent without one: the versions of other documents stay
	}
	policiesOf := func(ps []ratelimit.Policy) []policy {
		var out []policy
		for _, p := range ps {
			q := policy{Name: p.Name, Algorithm: p.Algorithm.Name(), Limit: p.Limit, Window: int64(p.Window), Burst: p.Burst, Shadow: p.Shadow}
			if p.Period != nil {
				q.Period = p.Period.String()
			}
			out = append(out, q)
		}
		return out
	}
	type rule struct {
		Name, Pattern, Tier string
		Key                 []string
		Cost                int64
		Estimate            int64  `json:",omitempty"` // absent without settle: the versions of other documents stay
		Settle              string `json:",omitempty"`
		FailClosed          bool
		Policies            []policy
	}
	type override struct {
		Part, Value, Rule string
		Unlimited         bool
		Policies          []policy
	}
	var canonical struct {
		Rules                   []rule
		Allow, Deny, DenyClient []string   `json:",omitempty"`
		Status                  int        `json:",omitempty"`
		Body                    string     `json:",omitempty"`
		Overrides               []override `json:",omitempty"`
	}
	canonical.Rules = make([]rule, len(rules))
	for i, r := range rules {
		canonical.Rules[i] = rule{Name: r.Name, Pattern: r.Pattern, Tier: r.Tier, Key: r.Key, Cost: r.Cost, Estimate: r.Estimate, Settle: r.Settle, FailClosed: r.FailClosed, Policies: policiesOf(r.Policies)}
	}
	for _, n := range a.allow {
		canonical.Allow = append(canonical.Allow, n.prefix.String())
	}
	for _, n := range a.deny {
		canonical.Deny = append(canonical.Deny, n.prefix.String())
	}
	for _, c := range a.denyClients {
		canonical.DenyClient = append(canonical.DenyClient, c.part+"="+c.value)
	}
	canonical.Status, canonical.Body = a.status, a.body
	for _, o := range overrides {
		canonical.Overrides = append(canonical.Overrides, override{o.client.part, o.client.value, o.rule, o.unlimited, policiesOf(o.policies)})
	}
	// The lists and the overrides mean the same in any order.
	slices.Sort(canonical.Allow)
	slices.Sort(canonical.Deny)
	slices.Sort(canonical.DenyClient)
	slices.SortFunc(canonical.Overrides, func(x, y override) int {
		return strings.Compare(x.Part+"\x00"+x.Value+"\x00"+x.Rule, y.Part+"\x00"+y.Value+"\x00"+y.Rule)
	})
	var b []byte
	var err error
	if len(canonical.Allow)+len(canonical.Deny)+len(canonical.DenyClient)+len(canonical.Overrides) == 0 && canonical.Status == 0 && canonical.Body == "" {
		b, err = json.Marshal(canonical.Rules) // as before the lists existed: versions of such documents do not change
	} else {
		b, err = json.Marshal(canonical)
	}
	if err != nil {
		panic("rules: " + err.Error()) // plain values: Marshal cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// Warnings returns what the document holds that is valid but does nothing, each at its line:
// an access entry inside a wider one of the same list, an allowed network inside a denied
// one (deny wins), an override of a denied client. [Parse] accepts the document; the ratelimit
// command's validate prints them.
func (s *Set) Warnings() Errors { return slices.Clone(s.warnings) }
