package echolimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/echo"
	"github.com/a7d3e0dd/ratelimit/internal/httpspec"
)

// TestHTTPSpec runs the HTTP spec table through Echo: the limit on the server (e.Use), and the
// per-route limit as route middleware of POST /login.
func TestHTTPSpec(t *testing.T) {
	httpspec.Run(t, func(t *testing.T, c httpspec.Config) httpspec.Server {
		h := func(ctx echo.Context) error {
			status, asError := c.Reply(ctx.QueryString())
			if asError {
				return echo.NewHTTPError(status)
			}
			return ctx.Blob(status, "text/plain; charset=utf-8", []byte("ok"))
		}
		e := echo.New()
		e.Use(echolimit.New(c.Limiter, c.Options...))
		e.GET("/items/:id", h)
		e.GET("/health", h)
		if c.Login != nil {
			e.POST("/login", h, echolimit.New(c.Limiter, c.Login...))
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
	record := ratelimit.WithSkip(func(r ratelimit.Request) bool { routes = append(routes, r.Route()); return false })
	e := echo.New()
	e.Use(echolimit.New(l, record))
	e.GET("/items/:id", func(c echo.Context) error { return nil }, echolimit.New(l, record))
	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/items/7", nil))
	if got, want := fmt.Sprint(routes), "[/items/:id /items/:id]"; got != want {
		t.Errorf("routes seen by the server's and the route's middleware: %s, want %s", got, want)
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
