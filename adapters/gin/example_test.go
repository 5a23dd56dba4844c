package ginlimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/gin"
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

// Limit every route of a Gin router to 2 requests per minute and 100 per hour per client IP.
func ExampleNew() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 2, Window: time.Minute}, ratelimit.Policy{Limit: 100, Window: time.Hour})
	if err != nil {
		panic(err)
	}
	r := gin.New()
	r.Use(ginlimit.New(limiter))
	r.GET("/hello", func(c *gin.Context) { c.String(http.StatusOK, "hello\n") })

	for range 3 {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/hello", nil))
		show(w)
	}
	// Output:
	// 200 Limit=2 Remaining=1
	// 200 Limit=2 Remaining=0
	// 429 Limit=2 Remaining=0 Retry-After=30
}

// A stricter limit on one route, as a handler of that route, over the same store. A route
// group takes it the same way: r.Group("/auth", ginlimit.New(limiter, ...)).
func ExampleNew_perRoute() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 100, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	r := gin.New()
	r.Use(ginlimit.New(limiter))
	r.POST("/login", ginlimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 2, Window: time.Minute})),
		func(c *gin.Context) { c.String(http.StatusOK, "welcome\n") })
	r.GET("/", func(c *gin.Context) { c.String(http.StatusOK, "home\n") })

	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodPost, "/login", nil),
		httptest.NewRequest(http.MethodPost, "/login", nil),
		httptest.NewRequest(http.MethodPost, "/login", nil),
		httptest.NewRequest(http.MethodGet, "/", nil),
	} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
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
	r := gin.New()
	r.Use(ginlimit.New(limiter))
	r.GET("/quota", func(c *gin.Context) {
		if d, ok := ginlimit.Decision(c); ok {
			c.String(http.StatusOK, "%d of %d left under %q\n", d.Remaining, d.Limit, d.Policy.Name)
		}
	})

	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/quota", nil))
	fmt.Print(w.Body)
	// Output: 9 of 10 left under "api"
}
