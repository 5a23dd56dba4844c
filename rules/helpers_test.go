package rules

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
)

// userKey is the context key under which the tests' authentication stores the user's id.
type userKey struct{}

// mustRead returns the contents of a file of testdata.
func mustRead(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustParse parses a file of testdata, with the tests' user key.
func mustParse(t testing.TB, name string) *Set {
	t.Helper()
	s, err := Parse(name, mustRead(t, name), WithUserKey(userKey{}))
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return s
}

// withoutKeyFuncs returns rules without their key functions, which reflect.DeepEqual cannot
// compare.
func withoutKeyFuncs(rules []Rule) []Rule {
	for i := range rules {
		rules[i].key = nil
	}
	return rules
}

// byPlan names the tier of each request by its X-Plan header, as a gateway might: the tests'
// WithTier, for the documents with tiers.
func byPlan() Option {
	return WithTier(func(r ratelimit.Request) string { return r.Header("X-Plan") })
}

// request is *http.Request seen as a ratelimit.Request, as the core's middleware sees it.
type request struct{ r *http.Request }

func (q request) Context() context.Context { return q.r.Context() }
func (q request) Method() string           { return q.r.Method }
func (q request) Path() string             { return q.r.URL.Path }
func (q request) Route() string            { return q.r.Pattern }
func (q request) RemoteAddr() string       { return q.r.RemoteAddr }
func (q request) Value(key any) any        { return q.r.Context().Value(key) }
func (q request) Header(name string) string {
	return strings.Join(q.r.Header.Values(name), ", ")
}
