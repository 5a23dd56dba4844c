package fiberlimit_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/fiber"
)

// show prints the status of a response and the rate-limit headers it carries.
func show(resp *http.Response) {
	fmt.Print(resp.StatusCode)
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "Retry-After"} {
		if v := resp.Header.Get(h); v != "" {
			fmt.Printf(" %s=%s", strings.TrimPrefix(h, "X-RateLimit-"), v)
		}
	}
	fmt.Println()
}

// Limit every route of a Fiber app to 2 requests per minute and 100 per hour per client IP.
func ExampleNew() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 2, Window: time.Minute}, ratelimit.Policy{Limit: 100, Window: time.Hour})
	if err != nil {
		panic(err)
	}
	app := fiber.New()
	app.Use(fiberlimit.New(limiter))
	app.Get("/hello", func(c *fiber.Ctx) error { return c.SendString("hello\n") })

	for range 3 {
		resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/hello", nil))
		if err != nil {
			panic(err)
		}
		show(resp)
	}
	// Output:
	// 200 Limit=2 Remaining=1
	// 200 Limit=2 Remaining=0
	// 429 Limit=2 Remaining=0 Retry-After=30
}

// A stricter limit on one route, as a handler of that route, over the same store. A group
// takes it the same way: app.Group("/auth", fiberlimit.New(limiter, ...)).
func ExampleNew_perRoute() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 100, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	app := fiber.New()
	app.Use(fiberlimit.New(limiter))
	app.Post("/login", fiberlimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 2, Window: time.Minute})),
		func(c *fiber.Ctx) error { return c.SendString("welcome\n") })
	app.Get("/", func(c *fiber.Ctx) error { return c.SendString("home\n") })

	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodPost, "/login", nil),
		httptest.NewRequest(http.MethodPost, "/login", nil),
		httptest.NewRequest(http.MethodPost, "/login", nil),
		httptest.NewRequest(http.MethodGet, "/", nil),
	} {
		resp, err := app.Test(req)
		if err != nil {
			panic(err)
		}
		show(resp)
	}
	// Output:
	// 200 Limit=2 Remaining=1
	// 200 Limit=2 Remaining=0
	// 429 Limit=2 Remaining=0 Retry-After=30
	// 200 Limit=100 Remaining=96
}

// The handler reads the limiter's decision about its request.
func ExampleDecision() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Name: "api", Limit: 10, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	app := fiber.New()
	app.Use(fiberlimit.New(limiter))
	app.Get("/quota", func(c *fiber.Ctx) error {
		d, ok := fiberlimit.Decision(c)
		if !ok {
			return c.SendStatus(http.StatusOK)
		}
		return c.SendString(fmt.Sprintf("%d of %d left under %q\n", d.Remaining, d.Limit, d.Policy.Name))
	})

	resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/quota", nil))
	if err != nil {
		panic(err)
	}
	io.Copy(os.Stdout, resp.Body)
	// Output: 9 of 10 left under "api"
}
