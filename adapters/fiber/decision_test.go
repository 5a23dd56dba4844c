package fiberlimit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/fiber"
)

// TestDecision checks that the handler reads the decision of its request with Decision: its
// Remaining is the X-RateLimit-Remaining header's, a per-route limit's decision replaces the
// app's, and a request no limiter decided (skipped, failed open) has none.
func TestDecision(t *testing.T) {
	seen := func(c *fiber.Ctx) error {
		if d, ok := fiberlimit.Decision(c); ok {
			return c.SendString(fmt.Sprintf("%s %d", d.Policy.Name, d.Remaining))
		}
		return c.SendString("none")
	}
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Name: "app", Limit: 3, Window: time.Minute})
	app := fiber.New()
	app.Use(fiberlimit.New(l, ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool { return r.Path() == "/health" }})))
	app.Get("/items/:id", seen)
	app.Get("/health", seen)
	app.Post("/login", fiberlimit.New(l, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 2, Window: time.Minute})), seen)
	down := fiber.New()
	down.Use(fiberlimit.New(mustNew(brokenStore{}, ratelimit.Policy{Limit: 1, Window: time.Second}),
		ratelimit.WithErrorHandler(func(ratelimit.Request, error) {})))
	down.Get("/items/:id", seen)
	for _, tc := range []struct {
		app          *fiber.App
		method, path string
		want         string
	}{
		{app, http.MethodGet, "/items/1", "app 2"},
		{app, http.MethodGet, "/items/1", "app 1"},
		{app, http.MethodGet, "/health", "none"},
		{app, http.MethodPost, "/login", "login 1"},
		{down, http.MethodGet, "/items/1", "none"},
	} {
		resp, err := tc.app.Test(httptest.NewRequest(tc.method, tc.path, nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		checkDecision(t, tc.method+" "+tc.path, string(body), tc.want, resp.Header.Get("X-RateLimit-Remaining"))
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
