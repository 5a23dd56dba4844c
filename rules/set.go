package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/a7d3e0dd/ratelimit"
)

// Set is a parsed and validated rules document. It does not change after [Parse], and is safe
// for concurrent use.
type Set struct {
	version   string
	versioned bool   // the document gave its version
	digest    string // a hash of what the rules say: two Sets of the same digest limit alike
	rules     []Rule

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
	// Cost is what each request costs (default 1).
	Cost int64
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

// contentVersion returns a hash of what the rules say, as 12 hexadecimal digits.
func contentVersion(rules []Rule) string {
	type policy struct {
		Name, Algorithm      string
		Limit, Window, Burst int64
		Shadow               bool
	}
	type rule struct {
		Name, Pattern, Tier string
		Key                 []string
		Cost                int64
		FailClosed          bool
		Policies            []policy
	}
	canonical := make([]rule, len(rules))
	for i, r := range rules {
		canonical[i] = rule{Name: r.Name, Pattern: r.Pattern, Tier: r.Tier, Key: r.Key, Cost: r.Cost, FailClosed: r.FailClosed}
		for _, p := range r.Policies {
			canonical[i].Policies = append(canonical[i].Policies, policy{p.Name, p.Algorithm.Name(), p.Limit, int64(p.Window), p.Burst, p.Shadow})
		}
	}
	b, err := json.Marshal(canonical)
	if err != nil {
		panic("rules: " + err.Error()) // plain values: Marshal cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}
