package fiberv3limit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v3"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/fiberv3"
)

// TestEscapedPath checks that the adapter's requests tell the path as Fiber matches routes on
// it: what picks a limit by route (a Switch, the rules engine) sees "/login" for the
// "/LOGIN/" that Fiber's default routing serves with the handler of "/login", and the path as
// sent when the app's routing is case-sensitive and strict.
func TestEscapedPath(t *testing.T) {
	for _, c := range []struct {
		config fiber.Config
		want   string
	}{
		{fiber.Config{}, "/login"},
		{fiber.Config{CaseSensitive: true, StrictRouting: true}, "/LOGIN/"},
	} {
		var seen string
		pick := ratelimit.Switch(func(r ratelimit.Request) *ratelimit.Guard {
			if e, ok := r.(interface{ EscapedPath() string }); ok {
				seen = e.EscapedPath()
			}
			return nil
		})
		app := fiber.New(c.config)
		app.Use(fiberv3limit.FromGuard(pick))
		app.Post("/login", func(c fiber.Ctx) error { return c.SendString("ok") })
		if _, err := app.Test(httptest.NewRequest(http.MethodPost, "/LOGIN/", nil)); err != nil {
			t.Fatal(err)
		}
		if seen != c.want {
			t.Errorf("case-sensitive %v, strict %v: POST /LOGIN/: the guard saw %q; want %q", c.config.CaseSensitive, c.config.StrictRouting, seen, c.want)
		}
	}
}
