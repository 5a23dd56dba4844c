package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// A shadow policy is evaluated and reported, and never changes a decision: a new limit tried
// on production traffic first. Its state is charged as if it were enforced alone: with what it
// admits, never with what it would have refused.
func TestShadowPolicy(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		for _, alg := range allAlgorithms {
			t.Run(alg.Name(), func(t *testing.T) {
				clock.Set(t0)
				l := mustNew(t, store,
					ratelimit.Policy{Name: "enforced", Limit: 5, Window: time.Hour},
					ratelimit.Policy{Name: "trial", Limit: 2, Window: time.Hour, Algorithm: alg, Shadow: true})
				key := keyOf(t)
				var shadowDenied int
				for i := range 6 {
					d := allow(t, l, key, 1)
					if want := i < 5; d.Allowed != want {
						t.Fatalf("request %d: allowed %v; want %v (the enforced 5 per hour alone)", i+1, d.Allowed, want)
					}
					if d.Policy.Name != "enforced" || d.Limit != 5 || d.Delay != 0 {
						t.Fatalf("request %d: binding policy %q, limit %d, delay %v; a shadow policy never binds nor delays", i+1, d.Policy.Name, d.Limit, d.Delay)
					}
					trial := d.Results()[1]
					if !trial.Policy.Shadow {
						t.Fatalf("request %d: second result is not the shadow policy: %+v", i+1, trial)
					}
					if !trial.Allowed {
						shadowDenied++
					}
				}
				// Enforced alone, the trial would have admitted its capacity: 2, or for the
				// shaping bucket its queue of 2.
				if shadowDenied != 4 {
					t.Errorf("the shadow policy would have denied %d of 6; want 4", shadowDenied)
				}
			})
		}
	})
}

// New needs an enforced policy; shadow policies are listed in the results, not in the headers.
func TestShadowPolicyHeaders(t *testing.T) {
	if _, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Hour, Shadow: true}); err == nil || !strings.Contains(err.Error(), "Shadow") {
		t.Errorf("New with only a shadow policy: %v; want an error naming Shadow", err)
	}
	l := mustNew(t, ratelimit.NewMemoryStore(),
		ratelimit.Policy{Name: "enforced", Limit: 5, Window: time.Hour},
		ratelimit.Policy{Name: "trial", Limit: 1, Window: time.Minute, Algorithm: algorithms.SlidingLog{}, Shadow: true})
	h := ratelimit.Middleware(l, ratelimit.WithResponse(ratelimit.Response{IETFDraft: 11}))(okHandler)
	for i := range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Limit") != "5" {
			t.Fatalf("request %d: %d, limit %q; want 200 under the enforced limit of 5", i+1, w.Code, w.Header().Get("X-RateLimit-Limit"))
		}
		if p := w.Header().Get("RateLimit-Policy"); strings.Contains(p, "trial") {
			t.Fatalf("RateLimit-Policy names the shadow policy: %q", p)
		}
	}
}

// A request too costly for a shadow policy alone is still decided by the enforced ones.
func TestShadowPolicyTooCostly(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		l := mustNew(t, store,
			ratelimit.Policy{Name: "bytes", Limit: 1 << 30, Window: time.Second},
			ratelimit.Policy{Name: "trial", Limit: 10, Window: time.Second, Shadow: true})
		d := allow(t, l, keyOf(t), 1<<20)
		if !d.Allowed || d.Remaining != 1<<30-1<<20 {
			t.Fatalf("1 MiB under 1 GiB/s enforced: %+v; want allowed", d)
		}
		if trial := d.Results()[1]; trial.Allowed || trial.RetryAfter != algorithms.Never {
			t.Fatalf("the shadow policy of 10/s on a cost of 1 MiB: %+v; want denied for ever", trial)
		}
	})
}

// A request too costly for an enforced policy is denied for ever, and a shadow policy that
// could hold its cost reports what it would have done with it, not with nothing: here denied,
// its 10 a minute having 3 left for a cost of 5 (it reported allowed, at cost 0).
func TestShadowPolicyBesideATooCostlyRequest(t *testing.T) {
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		l := mustNew(t, store,
			ratelimit.Policy{Name: "enforced", Limit: 4, Window: time.Minute},
			ratelimit.Policy{Name: "trial", Limit: 10, Window: time.Minute, Shadow: true})
		key := keyOf(t)
		for range 7 { // 4 admitted by the enforced limit: the trial then has 6 left
			allow(t, l, key, 1)
		}
		for _, c := range []struct {
			cost      int64
			allowed   bool
			remaining int64 // after the request, had it been admitted
		}{{5, true, 1}, {7, false, 6}} {
			d := allow(t, l, key, c.cost)
			if d.Allowed || d.RetryAfter != algorithms.Never {
				t.Fatalf("a cost of %d under an enforced 4 a minute: %+v; want denied for ever", c.cost, d)
			}
			if trial := d.Results()[1]; trial.Allowed != c.allowed || trial.Remaining != c.remaining {
				t.Errorf("a cost of %d, the shadow policy with 6 left: allowed %v, remaining %d; want %v, %d", c.cost, trial.Allowed, trial.Remaining, c.allowed, c.remaining)
			}
		}
	})
}

// Response.Shadow names the shadow policies that would have denied a request, and change nothing
// else.
func TestShadowHeader(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(),
		ratelimit.Policy{Name: "enforced", Limit: 5, Window: time.Hour},
		ratelimit.Policy{Name: "trial", Limit: 1, Window: time.Minute, Shadow: true},
		ratelimit.Policy{Name: "strict", Limit: 2, Window: time.Minute, Shadow: true})
	h := ratelimit.Middleware(l, ratelimit.WithResponse(ratelimit.Response{Shadow: true}))(okHandler)
	for i, want := range []string{"", "trial", "trial, strict", "trial, strict", "trial, strict", "trial, strict"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if got := w.Header().Get("X-RateLimit-Shadow"); got != want {
			t.Errorf("request %d: X-RateLimit-Shadow %q; want %q", i+1, got, want)
		}
		if wantCode := map[bool]int{true: 200, false: 429}[i < 5]; w.Code != wantCode {
			t.Errorf("request %d: status %d; want %d, the enforced policy's", i+1, w.Code, wantCode)
		}
	}
}

// A shadow policy never changes a response, its body included: a refusal's problem document
// lists the enforced policies that denied it, never a shadow policy that would have (it did,
// telling clients of a limit not in force; found by a review).
func TestShadowPolicyNotInProblemJSON(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(),
		ratelimit.Policy{Name: "enforced", Limit: 1, Window: time.Hour},
		ratelimit.Policy{Name: "trial", Limit: 1, Window: time.Hour, Shadow: true})
	h := ratelimit.Middleware(l, ratelimit.WithResponse(ratelimit.Response{ProblemJSON: true}))(okHandler)
	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != want {
			t.Fatalf("request %d: %d; want %d", i+1, w.Code, want)
		}
		if body := w.Body.String(); strings.Contains(body, "trial") {
			t.Errorf("request %d: the body names the shadow policy: %s", i+1, body)
		}
		if want == http.StatusTooManyRequests && !strings.Contains(w.Body.String(), `"violated-policies":["enforced"]`) {
			t.Errorf("the refusal's violated policies: %s; want [\"enforced\"]", w.Body.String())
		}
	}
}
