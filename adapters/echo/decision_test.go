package echolimit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/echo"
)

// TestDecision checks that the handler reads the decision of its request with Decision: its
// Remaining is the X-RateLimit-Remaining header's, a per-route limit's decision replaces the
// server's, and a request no limiter decided (skipped, failed open) has none.
func TestDecision(t *testing.T) {
	seen := func(c echo.Context) error {
		if d, ok := echolimit.Decision(c); ok {
			return c.String(http.StatusOK, fmt.Sprintf("%s %d", d.Policy.Name, d.Remaining))
		}
		return c.String(http.StatusOK, "none")
	}
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Name: "app", Limit: 3, Window: time.Minute})
	r := echo.New()
	r.Use(echolimit.New(l, ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool { return r.Path() == "/health" }})))
	r.GET("/items/:id", seen)
	r.GET("/health", seen)
	r.POST("/login", seen, echolimit.New(l, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 2, Window: time.Minute})))
	down := echo.New()
	down.Use(echolimit.New(mustNew(brokenStore{}, ratelimit.Policy{Limit: 1, Window: time.Second}),
		ratelimit.WithErrorHandler(func(ratelimit.Request, error) {})))
	down.GET("/items/:id", seen)
	for _, tc := range []struct {
		h            http.Handler
		method, path string
		want         string
	}{
		{r, http.MethodGet, "/items/1", "app 2"},
		{r, http.MethodGet, "/items/1", "app 1"},
		{r, http.MethodGet, "/health", "none"},
		{r, http.MethodPost, "/login", "login 1"},
		{down, http.MethodGet, "/items/1", "none"},
	} {
		w := httptest.NewRecorder()
		tc.h.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
		checkDecision(t, tc.method+" "+tc.path, w.Body.String(), tc.want, w.Header().Get("X-RateLimit-Remaining"))
	}
}

// checkDecision checks the decision a handler saw, "<policy> <remaining>" or "none", against
// want and the response's X-RateLimit-Remaining header.
func checkDecision(t *testing.T, req, seen, want, remaining string) {
	t.Helper()
	if seen != want {
		t.Errorf("%s: the handler saw the decision %q, want %q", req, seen, want)
	}
	if _, rem, ok := strings.Cut(seen, " "); ok && rem != remaining || !ok && remaining != "" {
		t.Errorf("%s: the handler saw %q, but X-RateLimit-Remaining is %q", req, seen, remaining)
	}
}

// brokenStore fails every call.
type brokenStore struct{}

var errDown = errors.New("the store is down")

func (brokenStore) Check(context.Context, string, []ratelimit.Policy, int64, bool, []ratelimit.PolicyResult) (time.Time, error) {
	return time.Time{}, errDown
}
func (brokenStore) Refund(context.Context, string, []ratelimit.Policy, int64, time.Time) error {
	return errDown
}
func (brokenStore) Reset(context.Context, string, []ratelimit.Policy) error { return errDown }
