package rls

import (
	"errors"
	"slices"
	"strings"
	"testing"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

func parse(t *testing.T, files ...string) (*Config, error) {
	t.Helper()
	fs := make([]File, len(files))
	for i, f := range files {
		fs[i] = File{Name: "f" + string(rune('1'+i)) + ".yaml", Data: []byte(f)}
	}
	return ParseConfig(fs...)
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  []string // each error, as "file:line: message" starts
	}{
		{"empty domain", []string{"domain: \"\"\ndescriptors: []\n"}, []string{"f1.yaml:1: config file cannot have empty domain"}},
		{"no domain", []string{"descriptors:\n  - key: a\n"}, []string{"f1.yaml:1: config file cannot have empty domain"}},
		{"empty file", []string{""}, []string{"f1.yaml: config file cannot have empty domain"}},
		{"duplicate domain", []string{"domain: d\n", "\n\ndomain: d\n"}, []string{`f2.yaml:3: duplicate domain "d": already declared at f1.yaml:1`}},
		{"duplicate key and value", []string{`domain: d
descriptors:
  - key: k
    value: v
  - key: k
    value: v
`}, []string{"f1.yaml:5: duplicate descriptor composite key 'd.k_v'"}},
		{"duplicate key without value", []string{`domain: d
descriptors:
  - key: k
    descriptors:
      - key: a
      - key: a
`}, []string{"f1.yaml:6: duplicate descriptor composite key 'd.k.a'"}},
		{"unit with unlimited", []string{`domain: d
descriptors:
  - key: k
    rate_limit:
      unlimited: true
      unit: second
`}, []string{"f1.yaml:6: should not specify rate limit unit when unlimited"}},
		{"unknown unit", []string{`domain: d
descriptors:
  - key: k
    rate_limit:
      unit: fortnight
      requests_per_unit: 5
`}, []string{"f1.yaml:5: invalid rate limit unit 'fortnight'"}},
		{"no unit", []string{`domain: d
descriptors:
  - key: k
    rate_limit:
      requests_per_unit: 5
`}, []string{"f1.yaml:5: invalid rate limit unit ''"}},
		{"unknown field", []string{`domain: d
descriptors:
  - key: k
    rate_limit: {unit: second, requests_per_unit: 5, bucket: 3}
`}, []string{`f1.yaml:4: unknown field "bucket" in rate_limit`}},
		{"misplaced field", []string{`domain: d
descriptors:
  - key: k
    unit: second
`}, []string{`f1.yaml:4: unknown field "unit" in a descriptor (it belongs in rate_limit)`}},
		{"unknown top field", []string{"domain: d\ndescriptor: []\n"}, []string{`f1.yaml:2: unknown field "descriptor" in the file`}},
		{"empty key", []string{"domain: d\ndescriptors:\n  - value: v\n"}, []string{"f1.yaml:3: descriptor has empty key"}},
		{"empty replaces", []string{`domain: d
descriptors:
  - key: k
    rate_limit:
      unit: second
      requests_per_unit: 1
      replaces:
        - name: ""
`}, []string{"f1.yaml:8: should not have an empty replaces entry"}},
		{"replaces itself", []string{`domain: d
descriptors:
  - key: k
    rate_limit:
      name: me
      unit: second
      requests_per_unit: 1
      replaces: [{name: me}]
`}, []string{"f1.yaml:8: replaces should not contain name of same descriptor"}},
		{"share_threshold without wildcard", []string{`domain: d
descriptors:
  - key: k
    value: v
    share_threshold: true
`}, []string{"f1.yaml:3: share_threshold can only be used with wildcard values"}},
		{"negative requests", []string{`domain: d
descriptors:
  - key: k
    rate_limit: {unit: second, requests_per_unit: -1}
`}, []string{"f1.yaml:4: requests_per_unit must be a whole number"}},
		{"requests not a number", []string{`domain: d
descriptors:
  - key: k
    rate_limit: {unit: second, requests_per_unit: many}
`}, []string{"f1.yaml:4: requests_per_unit must be a whole number"}},
		{"bool not a bool", []string{`domain: d
descriptors:
  - key: k
    shadow_mode: sometimes
`}, []string{"f1.yaml:4: shadow_mode must be true or false"}},
		{"descriptors not a list", []string{"domain: d\ndescriptors: {key: k}\n"}, []string{"f1.yaml:2: descriptors must be a list"}},
		{"field twice", []string{"domain: d\ndomain: e\n"}, []string{`f1.yaml:2: field "domain" given twice`}},
		{"bad yaml", []string{"domain: d\ndescriptors:\n  - key: [\n"}, []string{"f1.yaml:"}},
		{"every problem", []string{`domain: d
descriptors:
  - key: a
    rate_limit: {unit: eon}
  - key: b
    rate_limit: {unlimited: true, unit: day}
`}, []string{"f1.yaml:4: invalid rate limit unit 'eon'", "f1.yaml:6: should not specify rate limit unit when unlimited"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parse(t, tc.files...)
			if err == nil {
				t.Fatalf("parsed, with domains %v; want errors %q", cfg.Domains(), tc.want)
			}
			var got []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var ce *ConfigError
				if !errors.As(e, &ce) {
					t.Errorf("error %v is not a *ConfigError", e)
				}
				got = append(got, e.Error())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got errors %q, want %d: %q", got, len(tc.want), tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("error %d = %q, want it to start with %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

const sampleConfig = `domain: edge
descriptors:
  # every client address
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10
  - key: path
    value: /api/*
    rate_limit: {unit: minute, requests_per_unit: 100, name: api}
  - key: path
    value: /api/login
    rate_limit: {unit: hour, requests_per_unit: 5}
  - key: path
    value: "*/admin/*/edit"
    rate_limit: {unit: day, requests_per_unit: 3}
  - key: user
    descriptors:
      - key: plan
        value: free
        rate_limit: {unit: month, requests_per_unit: 1000}
      - key: plan
        value: gold
        rate_limit: {unlimited: true}
        shadow_mode: true
      - key: plan
        rate_limit: {unit: YEAR, requests_per_unit: 7, replaces: [{name: api}]}
        detailed_metric: true
        quota_mode: true
        value_to_metric: true
        metadata: {team: x}
  - key: nolimit
    value: here
`

func TestParseConfigLookup(t *testing.T) {
	cfg, err := parse(t, sampleConfig, "domain: other\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Domains(), ","); got != "edge,other" {
		t.Errorf("domains %q, want edge,other", got)
	}
	type want struct {
		path    string
		unit    rlsv3.RateLimitResponse_RateLimit_Unit
		perUnit uint32
	}
	for _, tc := range []struct {
		domain  string
		entries []entry
		want    *want // nil: no rule
	}{
		{"edge", []entry{{"remote_address", "10.0.0.1"}}, &want{"edge.remote_address", rlsv3.RateLimitResponse_RateLimit_SECOND, 10}},
		{"edge", []entry{{"path", "/api/x"}}, &want{"edge.path_/api/*", rlsv3.RateLimitResponse_RateLimit_MINUTE, 100}},
		{"edge", []entry{{"path", "/api/"}}, &want{"edge.path_/api/*", rlsv3.RateLimitResponse_RateLimit_MINUTE, 100}},
		{"edge", []entry{{"path", "/api/login"}}, &want{"edge.path_/api/login", rlsv3.RateLimitResponse_RateLimit_HOUR, 5}}, // exact before wildcard
		{"edge", []entry{{"path", "/v1/admin/users/edit"}}, &want{"edge.path_*/admin/*/edit", rlsv3.RateLimitResponse_RateLimit_DAY, 3}},
		{"edge", []entry{{"path", "/admin/edit"}}, nil}, // the middle '*' needs its slashes
		{"edge", []entry{{"path", "/web"}}, nil},
		{"edge", []entry{{"user", "u1"}, {"plan", "free"}}, &want{"edge.user.plan_free", rlsv3.RateLimitResponse_RateLimit_MONTH, 1000}},
		{"edge", []entry{{"user", "u1"}, {"plan", "silver"}}, &want{"edge.user.plan", rlsv3.RateLimitResponse_RateLimit_YEAR, 7}},
		{"edge", []entry{{"user", "u1"}}, nil},                                                                          // the level has no limit
		{"edge", []entry{{"user", "u1"}, {"plan", "free"}, {"extra", "1"}}, nil},                                        // deeper than the tree
		{"edge", []entry{{"remote_address", "10.0.0.1"}, {"path", "/api/x"}}, nil},                                      // leaves the tree
		{"edge", []entry{{"nolimit", "here"}}, nil},                                                                     // a descriptor without rate_limit
		{"other", []entry{{"remote_address", "10.0.0.1"}}, nil},                                                         // a domain without descriptors
		{"nowhere", []entry{{"remote_address", "10.0.0.1"}}, nil},                                                       // an unknown domain
		{"edge", []entry{{"Remote_address", "10.0.0.1"}}, nil},                                                          // keys are case-sensitive
		{"edge", []entry{{"path", "/api/*"}}, &want{"edge.path_/api/*", rlsv3.RateLimitResponse_RateLimit_MINUTE, 100}}, // the literal value
	} {
		r := cfg.lookup(tc.domain, tc.entries)
		switch {
		case tc.want == nil && r != nil:
			t.Errorf("%s %v: got rule %s, want none", tc.domain, tc.entries, r.path)
		case tc.want != nil && r == nil:
			t.Errorf("%s %v: got no rule, want %s", tc.domain, tc.entries, tc.want.path)
		case tc.want != nil && (r.path != tc.want.path || r.unit != tc.want.unit || r.perUnit != tc.want.perUnit):
			t.Errorf("%s %v: got %s %v %d, want %+v", tc.domain, tc.entries, r.path, r.unit, r.perUnit, *tc.want)
		}
	}
	gold := cfg.lookup("edge", []entry{{"user", "u"}, {"plan", "gold"}})
	if gold == nil || !gold.unlimited || !gold.shadow {
		t.Errorf("gold: got %+v, want unlimited and shadow", gold)
	}
	plan := cfg.lookup("edge", []entry{{"user", "u"}, {"plan", "x"}})
	if !plan.quota || !plan.detailed || len(plan.replaces) != 1 || plan.replaces[0] != "api" {
		t.Errorf("plan: got %+v, want quota, detailed, replaces [api]", plan)
	}
	if a, b := cfg.lookup("edge", []entry{{"path", "/api/x"}}), cfg.lookup("edge", []entry{{"path", "/api/login"}}); a.policyName == b.policyName {
		t.Errorf("two rules share the policy name %s", a.policyName)
	}
}

func TestParseConfigNone(t *testing.T) {
	cfg, err := ParseConfig()
	if err != nil || len(cfg.Domains()) != 0 {
		t.Fatalf("ParseConfig() = %v, %v; want an empty configuration", cfg, err)
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, value string
		want           bool
	}{
		{"a*", "a", true}, {"a*", "abc", true}, {"a*", "ba", false},
		{"*", "", true}, {"*", "x", true},
		{"*b", "ab", true}, {"*b", "ba", false},
		{"a*b*c", "abc", true}, {"a*b*c", "aXbYc", true}, {"a*b*c", "acb", false},
		{"ab*ba", "aba", false}, // the prefix and the suffix may not overlap
		{"a**b", "ab", true},
		{"plain", "plain", true}, {"plain", "plainer", false},
	} {
		if got := globMatch(strings.Split(tc.pattern, "*"), tc.value); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.value, got, tc.want)
		}
	}
}

// TestShareThreshold checks that every value a share_threshold wildcard matches counts in
// one count, the wildcard's, at any level, as in the reference.
func TestShareThreshold(t *testing.T) {
	const config = `domain: s
descriptors:
  - key: file
    value: files*
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: team
    descriptors:
      - key: file
        value: docs*
        share_threshold: true
        descriptors:
          - key: op
            rate_limit: {unit: hour, requests_per_unit: 2}
`
	cfg, err := parse(t, config)
	if err != nil {
		t.Fatal(err)
	}
	_, counted := cfg.match("s", []entry{{"team", "t1"}, {"file", "docsA"}, {"op", "read"}})
	if want := []entry{{"team", "t1"}, {"file", "docs*"}, {"op", "read"}}; !slices.Equal(counted, want) {
		t.Errorf("the counted entries %v, want %v", counted, want)
	}
	f := newFixture(t, config)
	for i, tc := range []struct {
		req  *rlsv3.RateLimitRequest
		want string
	}{
		{request("s", desc("file", "filesA")), "OK: OK 2/3/HOUR 1h0m0s"},
		{request("s", desc("file", "filesB")), "OK: OK 1/3/HOUR 1h0m0s"},
		{request("s", desc("file", "files")), "OK: OK 0/3/HOUR 1h0m0s"},
		{request("s", desc("file", "files*")), "OVER_LIMIT: OVER_LIMIT 0/3/HOUR 1h0m0s"}, // the wildcard itself: its count too, as in the reference
		{request("s", desc("team", "t1", "file", "docsA", "op", "r")), "OK: OK 1/2/HOUR 1h0m0s"},
		{request("s", desc("team", "t1", "file", "docsB", "op", "r")), "OK: OK 0/2/HOUR 1h0m0s"},
		{request("s", desc("team", "t2", "file", "docsB", "op", "r")), "OK: OK 1/2/HOUR 1h0m0s"},
	} {
		if got := summary(f.call(tc.req)); got != tc.want {
			t.Errorf("call %d: %s, want %s", i, got, tc.want)
		}
	}
}
