package fiberv3limit_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/fiberv3"
	"github.com/a7d3e0dd/ratelimit/internal/testing/httpspec"
)

// remoteAddrHeader carries the client address over app.Test, which serves every request from
// 0.0.0.0; the first handler of the test app moves it to the connection's remote address.
const remoteAddrHeader = "X-Test-Remote-Addr"

// noTimeout makes app.Test wait for the response however long it takes (Fiber v2's
// app.Test(req, -1)); its default gives up after a second.
var noTimeout = fiber.TestConfig{Timeout: 0}

// TestHTTPSpec runs the HTTP spec table through Fiber with app.Test: the limit on the app
// (app.Use), and the per-route limit as a handler of POST /login.
func TestHTTPSpec(t *testing.T) {
	httpspec.Run(t, func(t *testing.T, c httpspec.Config) httpspec.Server {
		h := func(ctx fiber.Ctx) error {
			status, asError := c.Reply(ctx.Context(), string(ctx.Request().URI().QueryString()))
			if asError {
				return fiber.NewError(status)
			}
			ctx.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
			return ctx.Status(status).SendString("ok")
		}
		app := fiber.New(fiber.Config{ReadBufferSize: 16 << 10}) // room for the over-long key header
		app.Use(func(ctx fiber.Ctx) error {
			ap := netip.MustParseAddrPort(ctx.Get(remoteAddrHeader))
			ctx.RequestCtx().SetRemoteAddr(net.TCPAddrFromAddrPort(ap))
			ctx.Request().Header.Del(remoteAddrHeader)
			return ctx.Next()
		})
		if c.Auth { // an authentication middleware in front of the limiter
			app.Use(func(ctx fiber.Ctx) error {
				if user := ctx.Get("X-User"); user != "" {
					ctx.Locals(httpspec.UserKey, strings.Clone(user)) // Fiber's string is valid until the handler returns
				}
				return ctx.Next()
			})
		}
		app.Use(fiberv3limit.New(c.Limiter, c.Options...))
		app.Get("/items/:id", h)
		app.Get("/health", h)
		if c.Login != nil {
			app.Post("/login", fiberv3limit.New(c.Limiter, c.Login...), h)
		} else {
			app.Post("/login", h)
		}
		return func(req *http.Request) *http.Response {
			req.Header.Set(remoteAddrHeader, req.RemoteAddr)
			resp, err := app.Test(req, noTimeout)
			if err != nil {
				t.Fatalf("app.Test: %v", err)
			}
			return resp
		}
	})
}

// TestRoute checks the route key functions see: the route's pattern in a route's handler, and
// "" in app.Use and group middleware, which runs before Fiber has matched the route.
func TestRoute(t *testing.T) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 100, Window: time.Minute})
	var routes []string
	record := ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool { routes = append(routes, r.Route()); return false }})
	app := fiber.New()
	app.Use(fiberv3limit.New(l, record))
	app.Get("/items/:id", fiberv3limit.New(l, record), func(c fiber.Ctx) error { return nil })
	api := app.Group("/api", fiberv3limit.New(l, record))
	api.Get("/users/:name", fiberv3limit.New(l, record), func(c fiber.Ctx) error { return nil })
	for _, path := range []string{"/items/7", "/api/users/ann"} {
		if _, err := app.Test(httptest.NewRequest(http.MethodGet, path, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := fmt.Sprint(routes), "[ /items/:id   /api/users/:name]"; got != want {
		t.Errorf("routes seen by the app's, the route's, the app's, the group's and the route's middleware: %q, want %q", got, want)
	}
}

// TestValue checks what key functions read with Request.Value, c.Locals, else c.Context()'s
// value, without allocating; and that Request.Context is c.Context().
func TestValue(t *testing.T) {
	type ctxKey struct{}
	var (
		got    string
		allocs float64
	)
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 100, Window: time.Minute})
	app := fiber.New()
	app.Use(func(c fiber.Ctx) error {
		c.Locals("user", "ann")
		c.SetContext(context.WithValue(c.Context(), ctxKey{}, "bob"))
		return c.Next()
	})
	app.Use(fiberv3limit.New(l, ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool {
		got = fmt.Sprintf("%v %v %v %v", r.Value("user"), r.Value(ctxKey{}), r.Value("absent"), r.Context().Value(ctxKey{}))
		allocs = testing.AllocsPerRun(100, func() { _, _ = r.Value("user"), r.Value(ctxKey{}) })
		return true
	}})))
	app.Get("/", func(c fiber.Ctx) error { return c.SendStatus(http.StatusOK) })
	if _, err := app.Test(httptest.NewRequest(http.MethodGet, "/", nil)); err != nil {
		t.Fatal(err)
	}
	if want := "ann bob <nil> bob"; got != want {
		t.Errorf("values: %q, want %q", got, want)
	}
	if allocs != 0 {
		t.Errorf("Value allocates %v times, want 0", allocs)
	}
}

// mustNew returns a limiter of the policies over store; it panics on an error.
func mustNew(store ratelimit.Store, policies ...ratelimit.Policy) *ratelimit.Limiter {
	l, err := ratelimit.New(store, policies...)
	if err != nil {
		panic(err)
	}
	return l
}
