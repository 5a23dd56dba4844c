package rules_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/a7d3e0dd/ratelimit/rules"
)

func Example() {
	doc := []byte(`
version: "2026-11-23.1"
rules:
  - name: search-free
    match: {pattern: "GET /search/{q}"}
    key: api_key
    tier: free
    policies:
      - {name: per-second, limit: 2, window: 1s}
      - {name: per-day, algorithm: sliding_window_counter, limit: 1000, window: 24h}
  - name: default
    key: ip
    policies:
      - {limit: 100, window: 1m}
`)
	set, err := rules.Parse("limits.yaml", doc)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("version", set.Version())
	for _, tier := range []string{"free", "pro"} {
		rule, _ := set.Match(httptest.NewRequest("GET", "/search/shoes", nil), tier)
		fmt.Printf("%s: rule %s, key %v, %d policies\n", tier, rule.Name, rule.Key, len(rule.Policies))
	}

	_, err = rules.Parse("limits.yaml", []byte(`
rules:
  - name: search
    key: [api_key, session]
    policies:
      - {limit: 10, window: 1x}
`))
	fmt.Println(err)
	// Output:
	// version 2026-11-23.1
	// free: rule search-free, key [api_key], 2 policies
	// pro: rule default, key [ip], 1 policies
	// limits.yaml:4: rules[0].key[1]: unknown key "session"; want ip, route, method, user, api_key or header:<Name>
	// limits.yaml:6: rules[0].policies[0].window: "1x" is not a duration (e.g. 1s, 1m30s, 1d)
}
