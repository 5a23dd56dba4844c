package echolimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/echo"
)

// junkPaths match no route of routeServer in any Echo v4 (Echo before v4.10.1 leaves them in
// Context.Path), some sharing a prefix with a route. ("/items/7/x" is no junk: Echo from v4.3
// matches it with /items/:id.)
var junkPaths = []string{"/nope0", "/nope1", "/nope2", "/items", "/i", "/api", "/api/v2"}

// routeServer serves GET /items/:id and, under the middleware of group /api/v1, GET
// /api/v1/x; e.Use limits with opts.
func routeServer(opts ...ratelimit.Option) func(method, path string) int {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute})
	ok := func(c echo.Context) error { return c.NoContent(http.StatusOK) }
	e := echo.New()
	e.Use(echolimit.New(l, opts...))
	e.GET("/items/:id", ok)
	g := e.Group("/api/v1", func(next echo.HandlerFunc) echo.HandlerFunc { return next })
	g.GET("/x", ok)
	return func(method, path string) int {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w.Code
	}
}

// TestUnmatchedRouteSharesQuota checks that a client cannot mint quotas by requesting paths
// that match no route: keyed by IP and route, they have no route (KeyByRoute finds no key),
// so all of them are limited by the client's IP, in one quota, whatever the path.
func TestUnmatchedRouteSharesQuota(t *testing.T) {
	serve := routeServer(ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute())))
	var got []int
	for _, p := range junkPaths {
		got = append(got, serve(http.MethodGet, p))
	}
	// A route keeps a quota of its own per client, shared by its paths.
	got = append(got, serve(http.MethodGet, "/items/7"), serve(http.MethodGet, "/items/8"))
	if got, want := fmt.Sprint(got), "[404 429 429 429 429 429 429 200 429]"; got != want {
		t.Errorf("statuses of %v then /items/7 and /items/8 under PerMinute(1): %s, want %s", junkPaths, got, want)
	}
}

// TestUnmatchedRoute checks the route key functions see: "" for a request no route matched,
// the route's pattern for one whose route lacks its method (405), and the catch-all pattern
// Echo registers for a group's middleware.
func TestUnmatchedRoute(t *testing.T) {
	var routes []string
	serve := routeServer(ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool {
		routes = append(routes, r.Route())
		return true
	}}))
	for _, p := range junkPaths {
		serve(http.MethodGet, p)
	}
	if want := fmt.Sprint(make([]string, len(junkPaths))); fmt.Sprint(routes) != want {
		t.Errorf("routes of %v: %q, want all empty", junkPaths, routes)
	}
	routes = nil
	if code := serve(http.MethodPost, "/items/7"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /items/7: status %d, want 405", code)
	}
	serve(http.MethodGet, "/api/v1/nope")
	if got, want := fmt.Sprint(routes), "[/items/:id /api/v1/*]"; got != want {
		t.Errorf("routes of POST /items/7 and GET /api/v1/nope: %s, want %s", got, want)
	}
}

// TestUnmatchedRouteReplacedHandler checks that an unmatched request is recognised when the
// program has replaced echo.NotFoundHandler, as Echo's documentation suggests.
func TestUnmatchedRouteReplacedHandler(t *testing.T) {
	saved := echo.NotFoundHandler
	t.Cleanup(func() { echo.NotFoundHandler = saved })
	echo.NotFoundHandler = func(c echo.Context) error { return c.String(http.StatusNotFound, "gone fishing") }
	var routes []string
	serve := routeServer(ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool {
		routes = append(routes, r.Route())
		return true
	}}))
	if code := serve(http.MethodGet, "/nope"); code != http.StatusNotFound {
		t.Errorf("GET /nope: status %d, want 404", code)
	}
	serve(http.MethodGet, "/items/7")
	if got, want := fmt.Sprintf("%q", routes), `["" "/items/:id"]`; got != want {
		t.Errorf("routes of /nope and /items/7: %s, want %s", got, want)
	}
}
