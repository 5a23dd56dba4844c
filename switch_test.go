package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// TestSwitch: a switch hands each request to the guard it picks, lets a request it picks none
// for through without headers, and completes each outcome with the guard that decided it: a
// CountIf refund and an in-flight slot go back to the right guard's policies.
func TestSwitch(t *testing.T) {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))
	login, err := ratelimit.NewGuard(mustNew(t, store, fixed(1, time.Minute, "login")),
		ratelimit.CountIf(func(status int) bool { return status == http.StatusUnauthorized }))
	if err != nil {
		t.Fatal(err)
	}
	export, err := ratelimit.NewGuard(mustNew(t, store, ratelimit.Policy{Name: "exports", Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}}))
	if err != nil {
		t.Fatal(err)
	}
	sw := ratelimit.Switch(func(r ratelimit.Request) *ratelimit.Guard {
		switch {
		case strings.HasPrefix(r.Path(), "/login"):
			return login
		case strings.HasPrefix(r.Path(), "/export"):
			return export
		}
		return nil
	})
	status := http.StatusOK
	h := ratelimit.FromGuard(sw)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
	serve := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w
	}
	for i := range 3 { // refunded each time: a successful login does not count
		if w := serve("/login"); w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Limit") != "1" {
			t.Fatalf("login %d: %d %v, want 200 under the login guard", i, w.Code, w.Header())
		}
	}
	status = http.StatusUnauthorized
	serve("/login")
	if w := serve("/login"); w.Code != http.StatusTooManyRequests {
		t.Errorf("after a failed login: %d, want 429", w.Code)
	}
	status = http.StatusOK
	for i := range 3 { // one slot, given back at the end of each request
		if w := serve("/export"); w.Code != http.StatusOK {
			t.Fatalf("export %d: %d, want 200: the slot of the one before came back", i, w.Code)
		}
	}
	for range 3 {
		if w := serve("/other"); w.Code != http.StatusOK || len(w.Header()) != 0 {
			t.Errorf("a request no guard is picked for: %d %v, want 200 and no header", w.Code, w.Header())
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Switch(nil) did not panic")
			}
		}()
		ratelimit.Switch(nil)
	}()
}

// A request a switch picks no guard for is not limited: its outcome says so (skipped), as the
// outcome of a request Access.Skip exempts does, not allowed — which says the store admitted it
// (found by a review). Nothing counts it: a switch has no observer of its own.
func TestSwitchPicksNoneResult(t *testing.T) {
	sw := ratelimit.Switch(func(ratelimit.Request) *ratelimit.Guard { return nil })
	o := sw.Check(ratelimit.HTTPRequest(httptest.NewRequest(http.MethodGet, "/", nil)))
	if !o.Proceed || o.Result != observe.ResultSkipped {
		t.Errorf("a request no guard is picked for: proceed %v, result %v; want it to proceed, skipped", o.Proceed, o.Result)
	}
}
