package rls

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// TestIETFHeadersAsTheGuard checks the IETF fields against the library's own: for the same
// policies on the same clock, a guard of the root module (its Middleware, with Response.IETFDraft)
// writes the fields WithIETFHeaders does, call after call, admitted or refused.
func TestIETFHeadersAsTheGuard(t *testing.T) {
	for _, draft := range []int{10, 11} {
		for _, tc := range []struct {
			key      string
			policies []ratelimit.Policy
		}{
			{"ip", []ratelimit.Policy{{Name: "edge.ip", Limit: 3, Window: time.Second, Algorithm: algorithms.FixedWindow{}}}},
			{"gcra", []ratelimit.Policy{{Name: "edge.gcra", Limit: 1, Window: time.Second, Burst: 3, Algorithm: algorithms.GCRA{}}}},
			{"two", []ratelimit.Policy{
				{Name: "pair", Limit: 2, Window: time.Second, Algorithm: algorithms.FixedWindow{}},
				{Name: "pair-2", Limit: 3, Window: time.Minute, Algorithm: algorithms.FixedWindow{}},
			}},
		} {
			f := newFixture(t, bothConfigs, WithIETFHeaders(draft))
			l, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(f.clock)), tc.policies...)
			if err != nil {
				t.Fatal(err)
			}
			h := ratelimit.Middleware(l, ratelimit.WithResponse(ratelimit.Response{IETFDraft: draft, NoXRateLimit: true}))(http.NotFoundHandler())
			f.clock.Advance(15*time.Second + 300*time.Millisecond)
			for i, advance := range []time.Duration{0, 0, 0, 0, 400 * time.Millisecond, 700 * time.Millisecond, 0, 0, time.Second} {
				f.clock.Advance(advance)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
				want := map[string]string{IETFPolicyHeader: rec.Header().Get(IETFPolicyHeader), IETFHeader: rec.Header().Get(IETFHeader)}
				if want[IETFHeader] == "" {
					t.Fatalf("draft %d, %s, call %d: the guard wrote no RateLimit field (status %d)", draft, tc.key, i, rec.Code)
				}
				got := map[string]string{}
				for _, h := range f.call(request("edge", desc(tc.key, "v"))).ResponseHeadersToAdd {
					got[h.Key] = h.Value
				}
				for _, name := range []string{IETFPolicyHeader, IETFHeader} {
					if got[name] != want[name] {
						t.Errorf("draft %d, %s, call %d: %s %q, the guard's %q", draft, tc.key, i, name, got[name], want[name])
					}
				}
			}
		}
	}
}
