package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v3"

	"github.com/a7d3e0dd/ratelimit"
	fiberv3limit "github.com/a7d3e0dd/ratelimit/adapters/fiberv3"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// A rules engine's guard on Fiber limits every request Fiber serves with a rule's route:
// Fiber's default routing ignores case and a trailing slash, so "/LOGIN" and "/login/" reach
// the handler of "POST /login", and meet its rule (they were not limited: the engine matched
// the path as sent, which no pattern matched).
func TestRulesMatchAsFiberRoutes(t *testing.T) {
	set, err := rules.Parse("limits.yaml", []byte(`rules:
  - name: login
    match: {pattern: "POST /login"}
    key: ip
    policies: [{name: login, algorithm: fixed_window, limit: 1, window: 1m}]
`))
	if err != nil {
		t.Fatal(err)
	}
	engine, err := rules.NewEngine(ratelimit.NewMemoryStore(), set)
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New()
	app.Use(fiberv3limit.FromGuard(engine.Guard()))
	app.Post("/login", func(c fiber.Ctx) error { return c.SendString("ok") })
	var got []int
	for _, path := range []string{"/login", "/login", "/LOGIN", "/login/", "/Login/"} {
		resp, err := app.Test(httptest.NewRequest(http.MethodPost, path, nil))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.StatusCode)
	}
	if fmt.Sprint(got) != "[200 429 429 429 429]" {
		t.Errorf("one client's logins, as /login, /login, /LOGIN, /login/, /Login/: %v; want [200 429 429 429 429]", got)
	}
}

// A pattern with capitals in its path ("/getUser", as camelCase routes are written) limits the
// requests Fiber serves with that route: Fiber compares paths in lower case, registered ones
// too, so "/getUser", "/getuser" and "/GETUSER/" all reach its handler. The engine matched the
// path in lower case against the pattern as written: no request met such a rule.
func TestRulesWithCapitalsMatchAsFiberRoutes(t *testing.T) {
	set, err := rules.Parse("limits.yaml", []byte(`rules:
  - name: user
    match: {pattern: "GET /api/getUser/{id}"}
    key: ip
    policies: [{name: user, algorithm: fixed_window, limit: 1, window: 1m}]
`))
	if err != nil {
		t.Fatal(err)
	}
	engine, err := rules.NewEngine(ratelimit.NewMemoryStore(), set)
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New()
	app.Use(fiberv3limit.FromGuard(engine.Guard()))
	app.Get("/api/getUser/:id", func(c fiber.Ctx) error { return c.SendString("ok") })
	var got []int
	for _, path := range []string{"/api/getUser/Bob", "/api/getUser/Bob", "/api/getuser/bob", "/API/GETUSER/bob/"} {
		resp, err := app.Test(httptest.NewRequest(http.MethodGet, path, nil))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.StatusCode)
	}
	if fmt.Sprint(got) != "[200 429 429 429]" {
		t.Errorf("one client's requests of GET /api/getUser/{id}, written three ways: %v; want [200 429 429 429]", got)
	}
}
