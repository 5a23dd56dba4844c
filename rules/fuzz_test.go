package rules

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
)

// FuzzParse: Parse never panics; it returns a Set or Errors, never both; every problem names
// the file and a line within it; every rule of a Set is valid for ratelimit.New, and Match
// works on it.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"limits.yaml", "limits.json", "match.yaml"} {
		f.Add(name, mustRead(f, name))
	}
	f.Add("limits.yaml", []byte("rules:\n  - name: a\n    key: [ip\n"))
	f.Add("limits.yaml", []byte("rules:\n  - {name: a, match: {pattern: \"/a/{x}\"}, key: ip, policies: &p [{limit: 1, window: 1s}]}\n  - {name: b, match: {pattern: \"/{y}/b\"}, key: ip, policies: *p}\n"))
	f.Add("limits.json", []byte(`{"rules": [{"name": "a", "key": ["ip", "header:X"], "cost": 2, "policies": [{"limit": 1, "window": "1s", "shadow": true}]}]}`))
	f.Add("limits", []byte("{\"rules\": [\n1,\n]}"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		s, err := Parse(name, data, WithUserKey(userKey{}))
		if (s == nil) == (err == nil) {
			t.Fatalf("Parse returned %v and %v", s, err)
		}
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("the error is not Errors: %#v", err)
			}
			lines := len(lineStarts(data, !isJSON(name, data)))
			for _, e := range errs {
				if e.File != name || e.Line < 0 || e.Line > lines {
					t.Fatalf("%q: line %d of %d", e, e.Line, lines)
				}
			}
			return
		}
		for _, r := range s.Rules() {
			if _, err := ratelimit.New(ratelimit.NewMemoryStore(), r.Policies...); err != nil {
				t.Fatalf("rule %s: %v", r.Name, err)
			}
			if r.KeyFunc() == nil {
				t.Fatalf("rule %s has no key function", r.Name)
			}
		}
		s.Match(httptest.NewRequest("GET", "/search/x", nil), "free")
	})
}
