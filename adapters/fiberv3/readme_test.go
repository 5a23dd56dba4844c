package fiberv3limit_test

import (
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/a7d3e0dd/ratelimit"
	fiberv3limit "github.com/a7d3e0dd/ratelimit/adapters/fiberv3"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmelogin"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// readmeSetup is docs/frameworks.md's Fiber v3 code, as written, over the app and
// limiter it names.
func readmeSetup(app *fiber.App, limiter *ratelimit.Limiter) {
	app.Use(fiberv3limit.New(limiter))
}

// TestReadmeSetup runs README's Fiber v3 code as written, with the login route of README's
// Fiber v2 code ("the same calls, on fiber.Ctx"): the login route admits 5 a minute per client, refuses the 6th with 429 and Retry-After without calling the handler, and
// answers as net/http's middleware does with the same options (the same status, body and
// headers, but those fasthttp adds); the handler reads the login policy's decision.
func TestReadmeSetup(t *testing.T) {
	readmetest.Same(t, "Fiber v3 code", readmetest.FuncBody(t, "readme_test.go", "readmeSetup"),
		readmetest.Code(readmetest.Containing(t, "../../docs/frameworks.md", `app.Use(fiberv3limit.New(limiter))`, "go")))

	clock := fakeclock.New(fakeclock.T0)
	limiter := readmelogin.NewLimiter(t, clock)
	app := fiber.New()
	app.Use(func(c fiber.Ctx) error { // the client's address, which app.Test does not set
		c.RequestCtx().SetRemoteAddr(net.TCPAddrFromAddrPort(netip.MustParseAddrPort(c.Get(remoteAddrHeader))))
		return c.Next()
	})
	var left []int64
	readmeSetup(app, limiter)
	login := func(c fiber.Ctx) error {
		if d, ok := fiberv3limit.Decision(c); ok {
			left = append(left, d.Remaining)
		}
		return c.SendString("welcome\n")
	}
	app.Post("/login", fiberv3limit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})), login)

	readmelogin.Run(t, clock, readmelogin.App{
		Name: "Fiber v3",
		Serve: func(req *http.Request) *http.Response {
			req.Header.Set(remoteAddrHeader, req.RemoteAddr)
			resp, err := app.Test(req, noTimeout)
			if err != nil {
				t.Fatal(err)
			}
			resp.Header.Del("Content-Length") // fasthttp's, which net/http's recorder does not add
			resp.Header.Del("Date")
			return resp
		},
		ContentType: "text/plain; charset=utf-8",
		Remaining:   func() []int64 { return left },
	})
}
