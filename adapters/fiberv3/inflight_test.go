package fiberv3limit_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/recover"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/fiberv3"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// An in-flight slot comes back when the handler returns, also when it panics (behind Fiber's
// recover) or returns an error: with one slot, every request in turn is served; a slot that
// leaked would refuse the next with 429. A request arriving while the slot is held is refused.
func TestInFlightSlotComesBack(t *testing.T) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	app := fiber.New()
	app.Use(recover.New(), fiberv3limit.New(l))
	app.Get("/panic", func(fiber.Ctx) error { panic("boom") })
	app.Get("/fail", func(fiber.Ctx) error { return fiber.NewError(fiber.StatusBadGateway) })
	app.Get("/ok", func(c fiber.Ctx) error { return c.SendStatus(fiber.StatusOK) })
	app.Get("/nested", func(c fiber.Ctx) error { // a second request while this one holds the slot
		resp, err := app.Test(httptest.NewRequest("GET", "/ok", nil), noTimeout)
		if err != nil {
			return err
		}
		return c.SendStatus(resp.StatusCode)
	})
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/panic", 500}, {"/panic", 500}, {"/fail", 502}, {"/ok", 200}, {"/nested", 429}, {"/ok", 200},
	} {
		resp, err := app.Test(httptest.NewRequest("GET", tc.path, nil), noTimeout)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.want {
			t.Fatalf("GET %s: %d; want %d", tc.path, resp.StatusCode, tc.want)
		}
	}
}
