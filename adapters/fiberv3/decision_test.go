package fiberv3limit_test

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

	"github.com/gofiber/fiber/v3"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/fiberv3"
)

// TestDecision checks that the handler reads the decision of its request with Decision: its
// Remaining is the X-RateLimit-Remaining header's, a per-route limit's decision replaces the
// app's, and a request no limiter decided (skipped, failed open) has none.
func TestDecision(t *testing.T) {
	seen := func(c fiber.Ctx) error {
		if d, ok := fiberv3limit.Decision(c); ok {
			return c.SendString(fmt.Sprintf("%s %d", d.Policy.Name, d.Remaining))
		}
		return c.SendString("none")
	}
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Name: "app", Limit: 3, Window: time.Minute})
	app := fiber.New()
	app.Use(fiberv3limit.New(l, ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool { return r.Path() == "/health" }})))
	app.Get("/items/:id", seen)
	app.Get("/health", seen)
	app.Post("/login", fiberv3limit.New(l, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 2, Window: time.Minute})), seen)
	down := fiber.New()
	down.Use(fiberv3limit.New(mustNew(brokenStore{}, ratelimit.Policy{Limit: 1, Window: time.Second}),
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
		resp, err := tc.app.Test(httptest.NewRequest(tc.method, tc.path, nil), noTimeout)
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

// customCtx is an app's own context (fiber.NewWithCustomCtx), which the adapter sees through
// the fiber.Ctx interface rather than as *fiber.DefaultCtx.
type customCtx struct{ *fiber.DefaultCtx }

// TestCustomCtx checks the adapter with an app's own context: the handler reads the decision,
// key functions read the route and c.Locals, and a refusal is answered.
func TestCustomCtx(t *testing.T) {
	var seen []string
	app := fiber.NewWithCustomCtx(func(app *fiber.App) fiber.CustomCtx { return &customCtx{fiber.NewDefaultCtx(app)} })
	app.Use(func(c fiber.Ctx) error {
		if _, ok := c.(*customCtx); !ok {
			return fmt.Errorf("the context is a %T, not the app's own", c)
		}
		c.Locals("user", "ann")
		return c.Next()
	})
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Name: "app", Limit: 2, Window: time.Minute})
	app.Get("/items/:id", fiberv3limit.New(l, ratelimit.WithKey(func(r ratelimit.Request) (string, error) {
		seen = append(seen, fmt.Sprintf("%s %v", r.Route(), r.Value("user")))
		return "k", nil
	})), func(c fiber.Ctx) error {
		if d, ok := fiberv3limit.Decision(c); ok {
			return c.SendString(fmt.Sprintf("%s %d", d.Policy.Name, d.Remaining))
		}
		return c.SendString("none")
	})
	for _, want := range []string{"app 1", "app 0", ""} {
		resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/items/1", nil), noTimeout)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if want == "" {
			if resp.StatusCode != http.StatusTooManyRequests {
				t.Errorf("third request: %d %q, want 429", resp.StatusCode, body)
			}
			continue
		}
		checkDecision(t, "GET /items/1", string(body), want, resp.Header.Get("X-RateLimit-Remaining"))
	}
	if got, want := fmt.Sprint(seen), "[/items/:id ann /items/:id ann /items/:id ann]"; got != want {
		t.Errorf("key functions saw %q, want %q", got, want)
	}
}
