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

// A rules engine's guard on Fiber limits every request Fiber serves with a rule's route, one
// a minute here: Fiber's default routing ignores case and a trailing slash, so "/LOGIN" and
// "/login/" reach the handler of "POST /login" and meet its rule (the engine matched the path
// as sent, which no pattern matched), and a pattern with capitals ("/getUser", as camelCase
// routes are written) limits what Fiber serves with that route (the engine matched the path
// in lower case against the pattern as written: no request met it).
func TestRulesMatchAsFiberRoutes(t *testing.T) {
	for _, c := range []struct {
		method, pattern, route string
		paths                  []string
	}{
		{http.MethodPost, "POST /login", "/login", []string{"/login", "/login", "/LOGIN", "/login/", "/Login/"}},
		{http.MethodGet, "GET /api/getUser/{id}", "/api/getUser/:id", []string{"/api/getUser/Bob", "/api/getUser/Bob", "/api/getuser/bob", "/API/GETUSER/bob/"}},
	} {
		set, err := rules.Parse("limits.yaml", []byte(fmt.Sprintf(`rules:
  - name: r
    match: {pattern: %q}
    key: ip
    policies: [{name: r, algorithm: fixed_window, limit: 1, window: 1m}]
`, c.pattern)))
		if err != nil {
			t.Fatal(err)
		}
		engine, err := rules.NewEngine(ratelimit.NewMemoryStore(), set)
		if err != nil {
			t.Fatal(err)
		}
		app := fiber.New()
		app.Use(fiberv3limit.FromGuard(engine.Guard()))
		app.Add([]string{c.method}, c.route, func(c fiber.Ctx) error { return c.SendString("ok") })
		var got []int
		for _, path := range c.paths {
			resp, err := app.Test(httptest.NewRequest(c.method, path, nil))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, resp.StatusCode)
		}
		want := "[200" // the first admitted, every later one refused
		for range c.paths[1:] {
			want += " 429"
		}
		if want += "]"; fmt.Sprint(got) != want {
			t.Errorf("%s: one client's requests %q: %v; want %s", c.pattern, c.paths, got, want)
		}
	}
}
