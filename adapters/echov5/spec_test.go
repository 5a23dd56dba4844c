package echov5limit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/echov5"
	"github.com/a7d3e0dd/ratelimit/internal/testing/httpspec"
)

// TestHTTPSpec runs the HTTP spec table through Echo v5: the limit on the server (e.Use), and
// the per-route limit as route middleware of POST /login.
func TestHTTPSpec(t *testing.T) {
	httpspec.Run(t, func(t *testing.T, c httpspec.Config) httpspec.Server {
		h := func(ctx *echo.Context) error {
			status, asError := c.Reply(ctx.Request().Context(), ctx.QueryString())
			if asError {
				return echo.NewHTTPError(status, "")
			}
			return ctx.Blob(status, "text/plain; charset=utf-8", []byte("ok"))
		}
		e := echo.New()
		if c.Auth { // an authentication middleware in front of the limiter
			e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
				return func(ctx *echo.Context) error {
					if user := ctx.Request().Header.Get("X-User"); user != "" {
						ctx.Set(httpspec.UserKey, user)
					}
					return next(ctx)
				}
			})
		}
		e.Use(echov5limit.New(c.Limiter, c.Options...))
		e.GET("/items/:id", h)
		e.GET("/health", h)
		if c.Login != nil {
			e.POST("/login", h, echov5limit.New(c.Limiter, c.Login...))
		} else {
			e.POST("/login", h)
		}
		return func(req *http.Request) *http.Response {
			w := httptest.NewRecorder()
			e.ServeHTTP(w, req)
			return w.Result()
		}
	})
}

// TestRoute checks the route key functions see: Echo has matched it before any middleware
// of e.Use runs.
func TestRoute(t *testing.T) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 100, Window: time.Minute})
	var routes []string
	record := ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool { routes = append(routes, r.Route()); return false }})
	e := echo.New()
	e.Use(echov5limit.New(l, record))
	e.GET("/items/:id", func(c *echo.Context) error { return nil }, echov5limit.New(l, record))
	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/items/7", nil))
	if got, want := fmt.Sprint(routes), "[/items/:id /items/:id]"; got != want {
		t.Errorf("routes seen by the server's and the route's middleware: %s, want %s", got, want)
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
	e := echo.New()
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			c.Set("user", "ann")
			c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), ctxKey{}, "bob")))
			return next(c)
		}
	})
	e.Use(echov5limit.New(l, ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool {
		got = fmt.Sprintf("%v %v %v %s", r.Value("user"), r.Value(ctxKey{}), r.Value("absent"), r.Header("x-api-key"))
		allocs = testing.AllocsPerRun(100, func() { _, _, _ = r.Value("user"), r.Value(ctxKey{}), r.Header("X-Api-Key") })
		return true
	}})))
	e.GET("/", func(c *echo.Context) error { return nil })
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("X-Api-Key", "k")
	e.ServeHTTP(httptest.NewRecorder(), req)
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
