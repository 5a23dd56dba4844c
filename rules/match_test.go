package rules

import (
	"fmt"
	"net/http/httptest"
	"testing"
)

func TestMatch(t *testing.T) {
	s := mustParse(t, "match.yaml")
	for _, tc := range []struct {
		method, target, tier string
		want                 string // the rule's name; "" for none
	}{
		// Method: GET /search/{q} matches GET and HEAD, and no other method.
		{"GET", "/search/shoes", "", "search"},
		{"HEAD", "/search/shoes", "", "search"},
		{"POST", "/search/shoes", "", "search-write"},
		{"DELETE", "/search/shoes", "", "any-search"},
		// Wildcards: {q} is one segment, {rest...} any number.
		{"GET", "/search/a/b", "", "any-search"},
		{"GET", "/files/a/b/c.txt", "", "files"},
		{"GET", "/files/", "", "files"},
		// The most specific pattern wins: an exact path over a wildcard.
		{"GET", "/search/special", "", "special"},
		// Host: a pattern with a host matches only that host, and wins over one without.
		{"POST", "http://uploads.example.com/files/x", "", "uploads"},
		{"POST", "http://other.example.com/files/x", "", "files"},
		{"POST", "http://uploads.example.com:8080/files/x", "", "uploads"},
		// Tier: the rule of the tier, else the one without a tier.
		{"GET", "/search/shoes", "free", "search-free"},
		{"GET", "/search/shoes", "pro", "search"},
		// A pattern with rules of other tiers only: the rules without a pattern apply.
		{"GET", "/reports/1", "gold", "reports-gold"},
		{"GET", "/reports/1", "free", "default-free"},
		{"GET", "/reports/1", "", "default"},
		// No pattern matches: the rules without a pattern, by tier.
		{"GET", "/elsewhere", "free", "default-free"},
		{"GET", "/elsewhere", "pro", "default"},
		// A path ServeMux would clean or redirect still finds its pattern.
		{"GET", "/search//shoes/../shoes", "", "search"},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		rule, ok := s.Match(r, tc.tier)
		got := ""
		if ok {
			got = rule.Name
		}
		if got != tc.want {
			t.Errorf("Match(%s %s, tier %q) = %q, want %q", tc.method, tc.target, tc.tier, got, tc.want)
		}
	}
}

func TestMatchNothing(t *testing.T) {
	s := mustParseString(t, "rules:\n  - {name: a, match: {pattern: \"GET /a\"}, key: ip, policies: [{limit: 1, window: 1s}]}\n  - {name: b, tier: gold, key: ip, policies: [{limit: 1, window: 1s}]}\n")
	for _, tc := range []struct{ method, target, tier string }{
		{"GET", "/b", ""},
		{"POST", "/a", ""},
		{"GET", "/b", "free"},
	} {
		if rule, ok := s.Match(httptest.NewRequest(tc.method, tc.target, nil), tc.tier); ok {
			t.Errorf("Match(%s %s, tier %q) = %q; want no rule", tc.method, tc.target, tc.tier, rule.Name)
		}
	}
	empty := mustParseString(t, "allow_empty: true\nrules: []\n")
	if _, ok := empty.Match(httptest.NewRequest("GET", "/", nil), ""); ok {
		t.Error("an empty Set matched a request")
	}
}

// TestPatternThatNeverMatches: ServeMux takes a pattern that no request can match, and so did
// Parse: methods are case-sensitive, so "get /login" matched no GET request, and a host is
// matched without the request's port, so "api.example.com:8443/" matched nothing; the rule
// never applied, and validation said the file was fine (found by a review). Both are refused,
// saying what to write; the patterns that can match still parse.
func TestPatternThatNeverMatches(t *testing.T) {
	for pattern, want := range map[string]string{
		"get /login":               `limits.yaml:2: rules[0].match.pattern: "get /login" matches no request: methods are case-sensitive, and clients send GET`,
		"Post /login":              `limits.yaml:2: rules[0].match.pattern: "Post /login" matches no request: methods are case-sensitive, and clients send POST`,
		"api.example.com:8443/":    `limits.yaml:2: rules[0].match.pattern: "api.example.com:8443/" matches no request: a request's host is matched without its port; write api.example.com`,
		"GET localhost:8080/a/{x}": `limits.yaml:2: rules[0].match.pattern: "GET localhost:8080/a/{x}" matches no request: a request's host is matched without its port; write localhost`,
	} {
		_, err := Parse("limits.yaml", []byte(fmt.Sprintf("rules:\n  - {name: a, match: {pattern: %q}, key: ip, policies: [{limit: 1, window: 1s}]}\n", pattern)))
		if err == nil || err.Error() != want {
			t.Errorf("pattern %q: %v\nwant %s", pattern, err, want)
		}
	}
	for _, tc := range []struct{ pattern, method, target string }{
		{"GET /login", "GET", "/login"},
		{"PURGE /cache/{k}", "PURGE", "/cache/x"}, // a method of one's own, upper-case
		{"api.example.com/", "GET", "http://api.example.com:8443/"},
	} {
		s := mustParseString(t, fmt.Sprintf("rules:\n  - {name: a, match: {pattern: %q}, key: ip, policies: [{limit: 1, window: 1s}]}\n", tc.pattern))
		if _, ok := s.Match(httptest.NewRequest(tc.method, tc.target, nil), ""); !ok {
			t.Errorf("pattern %q does not match %s %s", tc.pattern, tc.method, tc.target)
		}
	}
}

// TestPatternWithUpperCaseHost: ServeMux compares a request's host as the request spells it,
// and clients send hosts in lower case (browsers always; hosts are case-insensitive), so a
// rule of "API.example.com/" did not limit the requests to api.example.com, and validation
// said the file was fine (found by a review). It is refused, saying what to write. A host with
// a trailing dot is another host to ServeMux, which clients do send ("example.com." typed in a
// browser's address bar, or a URL with it): it matches those requests, and parses.
func TestPatternWithUpperCaseHost(t *testing.T) {
	for pattern, want := range map[string]string{
		"API.example.com/":         `limits.yaml:2: rules[0].match.pattern: "API.example.com/" matches only requests that spell the host in these capitals: hosts are case-insensitive, clients send them in lower case (browsers always do), and ServeMux compares them as spelled; write api.example.com`,
		"GET Example.COM/a/{x}":    `limits.yaml:2: rules[0].match.pattern: "GET Example.COM/a/{x}" matches only requests that spell the host in these capitals: hosts are case-insensitive, clients send them in lower case (browsers always do), and ServeMux compares them as spelled; write example.com`,
		"POST API.example.com:81/": `limits.yaml:2: rules[0].match.pattern: "POST API.example.com:81/" matches no request: a request's host is matched without its port; write api.example.com`,
	} {
		_, err := Parse("limits.yaml", []byte(fmt.Sprintf("rules:\n  - {name: a, match: {pattern: %q}, key: ip, policies: [{limit: 1, window: 1s}]}\n", pattern)))
		if err == nil || err.Error() != want {
			t.Errorf("pattern %q: %v\nwant %s", pattern, err, want)
		}
	}
	for _, tc := range []struct{ pattern, target string }{
		{"api.example.com/", "http://api.example.com/x"},
		{"example.com./", "http://example.com./x"},
		{"GET /Search/{q}", "/Search/x"}, // paths are case-sensitive: only the host is refused
	} {
		s := mustParseString(t, fmt.Sprintf("rules:\n  - {name: a, match: {pattern: %q}, key: ip, policies: [{limit: 1, window: 1s}]}\n", tc.pattern))
		if _, ok := s.Match(httptest.NewRequest("GET", tc.target, nil), ""); !ok {
			t.Errorf("pattern %q does not match GET %s", tc.pattern, tc.target)
		}
	}
}

// TestPatternThatNoClientSends: a host written in Unicode ("bücher.example/") is sent by
// clients in its ASCII form (xn--bcher-kva.example), and a '?' or '#' in a pattern's path
// matches only a path that escapes it (%3F, %23), never a query or a fragment, which a
// pattern does not match: such a rule silently limited nothing, and validation said the file
// was fine (found by a review). Each is refused, saying why.
func TestPatternThatNoClientSends(t *testing.T) {
	for pattern, want := range map[string]string{
		"bücher.example/": `limits.yaml:2: rules[0].match.pattern: "bücher.example/" matches no request: clients send an internationalized host in its ASCII form (xn--…, IDNA); write that`,
		"GET /x?y=1":      `limits.yaml:2: rules[0].match.pattern: "GET /x?y=1" matches only paths that escape "?" (%3F): a pattern matches a request's path, without its query or fragment`,
		"/docs#intro":     `limits.yaml:2: rules[0].match.pattern: "/docs#intro" matches only paths that escape "#" (%23): a pattern matches a request's path, without its query or fragment`,
	} {
		_, err := Parse("limits.yaml", []byte(fmt.Sprintf("rules:\n  - {name: a, match: {pattern: %q}, key: ip, policies: [{limit: 1, window: 1s}]}\n", pattern)))
		if err == nil || err.Error() != want {
			t.Errorf("pattern %q: %v\nwant %s", pattern, err, want)
		}
	}
	s := mustParseString(t, "rules:\n  - {name: a, match: {pattern: \"xn--bcher-kva.example/\"}, key: ip, policies: [{limit: 1, window: 1s}]}\n")
	if _, ok := s.Match(httptest.NewRequest("GET", "http://xn--bcher-kva.example/x", nil), ""); !ok {
		t.Error("the ASCII form of the host does not match")
	}
}
