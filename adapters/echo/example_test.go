package echolimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/echo"
)

// show prints the status of a response and the rate-limit headers it carries.
func show(w *httptest.ResponseRecorder) {
	fmt.Print(w.Code)
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "Retry-After"} {
		if v := w.Header().Get(h); v != "" {
			fmt.Printf(" %s=%s", strings.TrimPrefix(h, "X-RateLimit-"), v)
		}
	}
	fmt.Println()
}

// Limit every route of an Echo server to 2 requests per minute and 100 per hour per client IP.
func ExampleNew() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 2, Window: time.Minute}, ratelimit.Policy{Limit: 100, Window: time.Hour})
	if err != nil {
		panic(err)
	}
	e := echo.New()
	e.Use(echolimit.New(limiter))
	e.GET("/hello", func(c echo.Context) error { return c.String(http.StatusOK, "hello\n") })

	for range 3 {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/hello", nil))
		show(w)
	}
	// Output:
	// 200 Limit=2 Remaining=1
	// 200 Limit=2 Remaining=0
	// 429 Limit=2 Remaining=0 Retry-After=30
}

// A stricter limit on one route, as route middleware, over the same store. A group takes it
// the same way: e.Group("/auth", echolimit.New(limiter, ...)).
func ExampleNew_perRoute() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 100, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	e := echo.New()
	e.Use(echolimit.New(limiter))
	e.POST("/login", func(c echo.Context) error { return c.String(http.StatusOK, "welcome\n") },
		echolimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 2, Window: time.Minute})))
	e.GET("/", func(c echo.Context) error { return c.String(http.StatusOK, "home\n") })

	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodPost, "/login", nil),
		httptest.NewRequest(http.MethodPost, "/login", nil),
		httptest.NewRequest(http.MethodPost, "/login", nil),
		httptest.NewRequest(http.MethodGet, "/", nil),
	} {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		show(w)
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
	e := echo.New()
	e.Use(echolimit.New(limiter))
	e.GET("/quota", func(c echo.Context) error {
		d, ok := echolimit.Decision(c)
		if !ok {
			return c.NoContent(http.StatusOK)
		}
		return c.String(http.StatusOK, fmt.Sprintf("%d of %d left under %q\n", d.Remaining, d.Limit, d.Policy.Name))
	})

	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/quota", nil))
	fmt.Print(w.Body)
	// Output: 9 of 10 left under "api"
}
