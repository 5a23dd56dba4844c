package fiberlimit_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/fiber"
	"github.com/a7d3e0dd/ratelimit/internal/httpspec"
)

// remoteAddrHeader carries the client address over app.Test, which serves every request from
// 0.0.0.0; the first handler of the test app moves it to the connection's remote address.
const remoteAddrHeader = "X-Test-Remote-Addr"

// TestHTTPSpec runs the HTTP spec table through Fiber with app.Test: the limit on the app
// (app.Use), and the per-route limit as a handler of POST /login.
func TestHTTPSpec(t *testing.T) {
	httpspec.Run(t, func(t *testing.T, c httpspec.Config) httpspec.Server {
		h := func(ctx *fiber.Ctx) error {
			status, asError := c.Reply(string(ctx.Request().URI().QueryString()))
			if asError {
				return fiber.NewError(status)
			}
			ctx.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
			return ctx.Status(status).SendString("ok")
		}
		app := fiber.New(fiber.Config{ReadBufferSize: 16 << 10}) // room for the over-long key header
		app.Use(func(ctx *fiber.Ctx) error {
			ap := netip.MustParseAddrPort(ctx.Get(remoteAddrHeader))
			ctx.Context().SetRemoteAddr(net.TCPAddrFromAddrPort(ap))
			ctx.Request().Header.Del(remoteAddrHeader)
			return ctx.Next()
		})
		app.Use(fiberlimit.New(c.Limiter, c.Options...))
		app.Get("/items/:id", h)
		app.Get("/health", h)
		if c.Login != nil {
			app.Post("/login", fiberlimit.New(c.Limiter, c.Login...), h)
		} else {
			app.Post("/login", h)
		}
		return func(req *http.Request) *http.Response {
			req.Header.Set(remoteAddrHeader, req.RemoteAddr)
			resp, err := app.Test(req, -1)
			if err != nil {
				t.Fatalf("app.Test: %v", err)
			}
			return resp
		}
	})
}

// TestRoute checks the route key functions see: the route's pattern in a route's handler, and
// "" in app.Use middleware, which runs before Fiber has matched the route.
func TestRoute(t *testing.T) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 100, Window: time.Minute})
	var routes []string
	record := ratelimit.WithSkip(func(r ratelimit.Request) bool { routes = append(routes, r.Route()); return false })
	app := fiber.New()
	app.Use(fiberlimit.New(l, record))
	app.Get("/items/:id", fiberlimit.New(l, record), func(c *fiber.Ctx) error { return nil })
	if _, err := app.Test(httptest.NewRequest(http.MethodGet, "/items/7", nil)); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(routes), "[ /items/:id]"; got != want {
		t.Errorf("routes seen by the app's and the route's middleware: %q, want %q", got, want)
	}
}

// TestContext checks that key functions see the app's UserContext as the request's context,
// with its values: the user KeyByUser reads, here, and not fasthttp's RequestCtx, whose
// values are Fiber's Locals.
func TestContext(t *testing.T) {
	type userKey struct{}
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute})
	app := fiber.New()
	app.Use(func(c *fiber.Ctx) error {
		c.SetUserContext(context.WithValue(c.UserContext(), userKey{}, c.Get("X-User")))
		c.Locals(userKey{}, "local")
		return c.Next()
	})
	app.Use(fiberlimit.New(l, ratelimit.WithKey(ratelimit.KeyByUser(func(ctx context.Context) (string, bool) {
		id, ok := ctx.Value(userKey{}).(string)
		return id, ok
	}))))
	app.Get("/", func(c *fiber.Ctx) error { return c.SendStatus(http.StatusOK) })
	var got []int
	for _, user := range []string{"ann", "ann", "bob"} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-User", user)
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.StatusCode)
	}
	if got, want := fmt.Sprint(got), "[200 429 200]"; got != want {
		t.Errorf("statuses of ann, ann, bob under PerMinute(1) per user: %s, want %s", got, want)
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
