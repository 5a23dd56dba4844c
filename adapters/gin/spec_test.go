package ginlimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/gin"
	"github.com/a7d3e0dd/ratelimit/internal/testing/httpspec"
)

func init() { gin.SetMode(gin.ReleaseMode) }

// TestHTTPSpec runs the HTTP spec table through Gin: the limit on the router (r.Use), and the
// per-route limit as a handler of POST /login.
func TestHTTPSpec(t *testing.T) {
	httpspec.Run(t, func(t *testing.T, c httpspec.Config) httpspec.Server {
		h := func(ctx *gin.Context) {
			status, _ := c.Reply(ctx.Request.Context(), ctx.Request.URL.RawQuery) // no error path in Gin: write the status
			ctx.Data(status, "text/plain; charset=utf-8", []byte("ok"))
		}
		r := gin.New()
		if c.Auth { // an authentication middleware in front of the limiter
			r.Use(func(ctx *gin.Context) {
				if user := ctx.GetHeader("X-User"); user != "" {
					ctx.Set(httpspec.UserKey, user)
				}
			})
		}
		r.Use(ginlimit.New(c.Limiter, c.Options...))
		r.GET("/items/:id", h)
		r.GET("/health", h)
		if c.Login != nil {
			r.POST("/login", ginlimit.New(c.Limiter, c.Login...), h)
		} else {
			r.POST("/login", h)
		}
		return func(req *http.Request) *http.Response {
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			return w.Result()
		}
	})
}

// TestRoute checks the route key functions see: Gin has matched it before any middleware runs.
func TestRoute(t *testing.T) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 100, Window: time.Minute})
	var routes []string
	record := ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool { routes = append(routes, r.Route()); return false }})
	r := gin.New()
	r.Use(ginlimit.New(l, record))
	r.GET("/items/:id", ginlimit.New(l, record), func(c *gin.Context) {})
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/items/7", nil))
	if got, want := fmt.Sprint(routes), "[/items/:id /items/:id]"; got != want {
		t.Errorf("routes seen by the router's and the route's middleware: %s, want %s", got, want)
	}
}

// TestValue checks what key functions read with Request.Value, what c.Set stored under a
// string key, else the request context's value, and that Value and Header (of a single field
// line) do not allocate.
func TestValue(t *testing.T) {
	type ctxKey struct{}
	var (
		got    string
		allocs float64
	)
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 100, Window: time.Minute})
	r := gin.New()
	r.Use(func(c *gin.Context) {
		c.Set("user", "ann")
		c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), ctxKey{}, "bob"))
	})
	r.Use(ginlimit.New(l, ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool {
		got = fmt.Sprintf("%v %v %v %s", r.Value("user"), r.Value(ctxKey{}), r.Value("absent"), r.Header("x-api-key"))
		allocs = testing.AllocsPerRun(100, func() { _, _, _ = r.Value("user"), r.Value(ctxKey{}), r.Header("X-Api-Key") })
		return true
	}})))
	r.GET("/", func(c *gin.Context) {})
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("X-Api-Key", "k")
	r.ServeHTTP(httptest.NewRecorder(), req)
	if want := "ann bob <nil> k"; got != want {
		t.Errorf("values and header: %q, want %q", got, want)
	}
	if allocs != 0 {
		t.Errorf("Value and Header allocate %v times, want 0", allocs)
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
