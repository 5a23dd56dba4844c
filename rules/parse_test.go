package rules

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

func TestYAMLAndJSONAgree(t *testing.T) {
	y, j := mustParse(t, "limits.yaml"), mustParse(t, "limits.json")
	if y.Version() != "2026-11-23.1" || j.Version() != y.Version() {
		t.Errorf("versions: YAML %q, JSON %q; want both 2026-11-23.1", y.Version(), j.Version())
	}
	if !reflect.DeepEqual(withoutKeyFuncs(y.Rules()), withoutKeyFuncs(j.Rules())) {
		t.Errorf("the rules differ:\nYAML %+v\nJSON %+v", y.Rules(), j.Rules())
	}
}

func TestParseGood(t *testing.T) {
	s := mustParse(t, "limits.yaml")
	rules := s.Rules()
	if len(rules) != 5 {
		t.Fatalf("got %d rules, want 5", len(rules))
	}
	want := Rule{
		Name: "search-free", Pattern: "GET /search/{q}", Tier: "free", Key: []string{"api_key"}, Cost: 1,
		Policies: []ratelimit.Policy{
			{Name: "per-second", Algorithm: algorithms.GCRA{}, Limit: 10, Window: time.Second, Burst: 20},
			{Name: "per-hour", Algorithm: algorithms.SlidingCounter{}, Limit: 1000, Window: time.Hour},
		},
	}
	if got := withoutKeyFuncs(s.Rules())[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("rules[0]:\n got %+v\nwant %+v", got, want)
	}
	upload := rules[2]
	if upload.Cost != 5 || !upload.FailClosed || !reflect.DeepEqual(upload.Key, []string{"header:X-Tenant", "method"}) {
		t.Errorf("upload: cost %d, fail closed %v, key %q; want 5, true, [header:X-Tenant method]", upload.Cost, upload.FailClosed, upload.Key)
	}
	if a := rules[3].Policies[0].Algorithm; a != (algorithms.LeakyBucket{Shaping: true}) {
		t.Errorf("export's algorithm is %#v, want LeakyBucket{Shaping: true}", a)
	}
	if rules[3].Cost != 0 {
		t.Errorf("export's cost is %d, want 0", rules[3].Cost)
	}
	def := rules[4]
	if def.Cost != 1 || def.FailClosed || def.Policies[0].Algorithm != (algorithms.GCRA{}) || def.Policies[0].Name != "" {
		t.Errorf("default: %+v; want cost 1, fail open, GCRA, no name", def)
	}
	for _, r := range rules {
		if _, err := ratelimit.New(ratelimit.NewMemoryStore(), r.Policies...); err != nil {
			t.Errorf("rule %s: ratelimit.New: %v", r.Name, err)
		}
		if r.KeyFunc() == nil {
			t.Errorf("rule %s has no key function", r.Name)
		}
	}
}

func TestRulesAreCopies(t *testing.T) {
	s := mustParse(t, "limits.yaml")
	rules := s.Rules()
	rules[0].Name = "changed"
	rules[0].Key[0] = "ip"
	rules[0].Policies[0].Limit = 1
	again := s.Rules()[0]
	if again.Name != "search-free" || again.Key[0] != "api_key" || again.Policies[0].Limit != 10 {
		t.Errorf("changing a copy changed the Set: %+v", again)
	}
}

func TestVersionWhenAbsent(t *testing.T) {
	withoutVersion := func(name string) *Set {
		b := mustRead(t, name)
		b = []byte(strings.Replace(string(b), `"2026-11-23.1"`, `null`, 1))
		s, err := Parse(name, b, WithUserKey(userKey{}))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	y, j := withoutVersion("limits.yaml"), withoutVersion("limits.json")
	if len(y.Version()) != 12 || y.Version() != j.Version() {
		t.Errorf("versions: YAML %q, JSON %q; want the same 12 hexadecimal digits", y.Version(), j.Version())
	}
	// Layout and comments are not content; a limit is.
	a := mustParseString(t, "rules:\n- {name: a, key: ip, policies: [{limit: 10, window: 1s}]}\n")
	b := mustParseString(t, "# comment\nrules:\n  - name: a\n    key: [ip]\n    cost: 1\n    policies:\n      - {limit: 10, window: 1s, algorithm: gcra}\n")
	c := mustParseString(t, "rules:\n- {name: a, key: ip, policies: [{limit: 11, window: 1s}]}\n")
	if a.Version() != b.Version() {
		t.Errorf("the same rules written two ways have versions %q and %q", a.Version(), b.Version())
	}
	if a.Version() == c.Version() {
		t.Errorf("different rules have one version %q", a.Version())
	}
	if v := mustParseString(t, "version: 3\nallow_empty: true\nrules: []\n").Version(); v != "3" {
		t.Errorf("version: 3 is %q", v)
	}
}

func mustParseString(t *testing.T, doc string) *Set {
	t.Helper()
	s, err := Parse("limits.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("Parse(%q): %v", doc, err)
	}
	return s
}

func TestFormatChoice(t *testing.T) {
	json := []byte(`{"rules": [{"name": "a", "key": "ip", "policies": [{"limit": 1, "window": "1s"}]}]}`)
	yaml := []byte("rules: [{name: a, key: ip, policies: [{limit: 1, window: 1s}]}]")
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"limits.json", json, true},
		{"limits.JSON", json, true},
		{"limits", json, true},                                       // detected by its '{'
		{"limits", append([]byte("\xef\xbb\xbf \n"), json...), true}, // after a BOM and space
		{"limits.yaml", json, true},                                  // JSON is YAML too
		{"limits.yml", yaml, true},
		{"limits", yaml, true},
		{"limits.json", yaml, false},
		{"limits", []byte("{rules: []}"), false}, // YAML's flow style, taken for JSON
	} {
		_, err := Parse(tc.name, tc.data)
		if (err == nil) != tc.ok {
			t.Errorf("Parse(%q, %.20q): %v; want ok %v", tc.name, tc.data, err, tc.ok)
		}
	}
}

// An anchor in one rule can stand for its value in another.
func TestYAMLAliases(t *testing.T) {
	s := mustParseString(t, `
rules:
  - name: a
    match: {pattern: /a}
    key: &key [ip, route]
    policies: &std
      - {name: per-second, limit: 10, window: 1s}
  - {name: b, match: {pattern: /b}, key: *key, policies: *std}
`[1:])
	rules := withoutKeyFuncs(s.Rules())
	if !reflect.DeepEqual(rules[0].Policies, rules[1].Policies) || !reflect.DeepEqual(rules[1].Key, []string{"ip", "route"}) {
		t.Errorf("b = %+v; want a's key and policies, %+v", rules[1], rules[0])
	}
}

func TestUserKey(t *testing.T) {
	doc := []byte("rules: [{name: a, key: user, policies: [{limit: 1, window: 1s}]}]")
	if _, err := Parse("limits.yaml", doc); err == nil || !strings.Contains(err.Error(), "WithUserKey") {
		t.Errorf("user without WithUserKey: %v; want an error naming WithUserKey", err)
	}
	if _, err := Parse("limits.yaml", doc, WithUserKey("user")); err != nil {
		t.Errorf("user with WithUserKey: %v", err)
	}
}

// validName is the core's rule for names: the two agree on every kind of name.
func TestValidNameAgreesWithCore(t *testing.T) {
	for _, name := range []string{
		"a", "search-free", "a.b_c-9", "z" + strings.Repeat("9", 63), "z" + strings.Repeat("9", 64),
		"A", "9a", "-a", "a b", "a/b", "é", "aé", "a\x00",
	} {
		_, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Name: name, Limit: 1, Window: time.Second})
		if validName(name) != (err == nil) {
			t.Errorf("validName(%q) = %v; the core says %v", name, validName(name), err)
		}
	}
}

func TestErrorsList(t *testing.T) {
	_, err := Parse("limits.yaml", []byte("rules:\n  - name: A\n    key: ip\n    policies: []\n"))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 2 {
		t.Fatalf("got %v; want Errors of 2", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || e.Column != 11 || e.Field != "rules[0].name" {
		t.Errorf("the first error is %+v; want line 2, column 11, field rules[0].name", e)
	}
}

// A policy's limit and window can be written as a rate, as ratelimit.ParsePolicy reads it;
// a bad rate, or a rate beside a limit or a window, is an error naming the field.
func TestRates(t *testing.T) {
	set, err := Parse("r.yaml", []byte(`version: "1"
rules:
  - name: api
    key: ip
    policies:
      - {name: per-minute, rate: 100/min}
      - {name: burst, rate: 20/10s, algorithm: sliding_window_log}
      - {name: daily, limit: 1000, window: 24h}
      - {name: days, limit: 5000, window: 1d}
      - {name: week, limit: 9000, window: 7d12h}
`))
	if err != nil {
		t.Fatal(err)
	}
	ps := set.Rules()[0].Policies
	if ps[0].Limit != 100 || ps[0].Window != time.Minute || ps[1].Limit != 20 || ps[1].Window != 10*time.Second || ps[2].Limit != 1000 ||
		ps[3].Window != 24*time.Hour || ps[4].Window != 7*24*time.Hour+12*time.Hour {
		t.Fatalf("policies %+v", ps)
	}
	for doc, want := range map[string]string{
		`{name: a, rate: 100/fortnight}`:       `rules[0].policies[0].rate: rate "100/fortnight": window "fortnight" is not a unit`,
		`{name: a, rate: 100/min, limit: 5}`:   "rules[0].policies[0].rate: give rate, or limit and window, not both",
		`{name: a, rate: 100/min, window: 1h}`: "give rate, or limit and window, not both",
		`{name: a, window: 1h}`:                "rules[0].policies[0].limit: required (or rate)",
		// Days are read as ratelimit.ParseDuration reads them, and the bound is named.
		`{name: a, limit: 1, window: 367d}`: `rules[0].policies[0].window: ratelimit: invalid policy "a": Window is 367d; it must be at most 366 days`,
		`{name: a, rate: 1/367d}`:           `rules[0].policies[0].rate: rate "1/367d": window "367d": it must be at most 366 days`,
		`{name: a, limit: 1, window: 1.5d}`: `rules[0].policies[0].window: "1.5d" is not a duration (e.g. 1s, 1m30s, 1d)`,
	} {
		_, err := Parse("r.yaml", []byte("version: \"1\"\nrules:\n  - name: api\n    key: ip\n    policies:\n      - "+doc+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error containing %q", doc, err, want)
		}
	}
}

// TestLeadingZeroIsRefused: YAML's parser reads an integer written with a leading zero as
// octal, as YAML 1.1 did (YAML 1.2 reads it as decimal): "limit: 0100" was a limit of 64, and
// "cost: 010" a cost of 8, without a word (found by a review). Such a number is now refused at
// its field; 100, 0o144 and 0x64 say what they mean, and are read so.
func TestLeadingZeroIsRefused(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"rules:\n  - {name: a, key: ip, policies: [{limit: 0100, window: 1m}]}\n", "limits.yaml:2: rules[0].policies[0].limit: 0100 starts with 0"},
		{"rules:\n  - {name: a, key: ip, cost: 010, policies: [{limit: 100, window: 1m}]}\n", "limits.yaml:2: rules[0].cost: 010 starts with 0"},
		{"rules:\n  - {name: a, key: ip, policies: [{limit: 100, window: 1m, burst: !!int '0_20'}]}\n", "limits.yaml:2: rules[0].policies[0].burst: 0_20 starts with 0"},
	} {
		_, err := Parse("limits.yaml", []byte(tc.doc))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Parse(%q): %v\nwant %s...", tc.doc, err, tc.want)
		}
	}
	for doc, want := range map[string]int64{
		"rules:\n  - {name: a, key: ip, policies: [{limit: 100, window: 1m}]}\n":            100,
		"rules:\n  - {name: a, key: ip, policies: [{limit: 0o144, window: 1m}]}\n":          100,
		"rules:\n  - {name: a, key: ip, policies: [{limit: 0x64, window: 1m}]}\n":           100,
		"rules:\n  - {name: a, key: ip, cost: 0, policies: [{limit: 100, window: 1m}]}\n":   100,
		"rules:\n  - {name: a, key: ip, policies: [{limit: 100, window: 1m, burst: -0}]}\n": 100,
	} {
		if got := mustParseString(t, doc).rules[0].Policies[0].Limit; got != want {
			t.Errorf("Parse(%q): limit %d, want %d", doc, got, want)
		}
	}
}
