package echov5limit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/echov5"
)

// junkPaths match no route of routeServer, some sharing a prefix with a route. ("/items/7/x"
// is no junk: Echo matches it with /items/:id.)
var junkPaths = []string{"/nope0", "/nope1", "/nope2", "/items", "/i", "/api", "/api/v2"}

// routeServer serves GET /items/:id and, under the middleware of group /api/v1, GET
// /api/v1/x; e.Use limits with opts. A config, when given, configures the server.
func routeServer(config echo.Config, opts ...ratelimit.Option) func(method, path string) int {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute})
	ok := func(c *echo.Context) error { return c.NoContent(http.StatusOK) }
	e := echo.NewWithConfig(config)
	e.Use(echov5limit.New(l, opts...))
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
	serve := routeServer(echo.Config{}, ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute())))
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
	serve := routeServer(echo.Config{}, ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool {
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
// program has replaced the router's NotFoundHandler and MethodNotAllowedHandler, Echo v5's way
// (RouterConfig), and that a route registered with RouteNotFound keeps its pattern.
func TestUnmatchedRouteReplacedHandler(t *testing.T) {
	router := echo.NewRouter(echo.RouterConfig{
		NotFoundHandler: func(c *echo.Context) error { return c.String(http.StatusNotFound, "gone fishing") },
		MethodNotAllowedHandler: func(c *echo.Context) error {
			return c.String(http.StatusMethodNotAllowed, "not like that")
		},
	})
	var routes []string
	serve := routeServer(echo.Config{Router: router}, ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool {
		routes = append(routes, r.Route())
		return true
	}}))
	if code := serve(http.MethodGet, "/nope"); code != http.StatusNotFound {
		t.Errorf("GET /nope: status %d, want 404", code)
	}
	if code := serve(http.MethodPost, "/items/7"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /items/7: status %d, want 405", code)
	}
	serve(http.MethodGet, "/items/7")
	if got, want := fmt.Sprintf("%q", routes), `["" "/items/:id" "/items/:id"]`; got != want {
		t.Errorf("routes of /nope, POST /items/7 and /items/7: %s, want %s", got, want)
	}

	routes = nil
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute})
	e := echo.New()
	e.Use(echov5limit.New(l, ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool {
		routes = append(routes, r.Route())
		return true
	}})))
	e.RouteNotFound("/files/*", func(c *echo.Context) error { return c.String(http.StatusNotFound, "no such file") })
	for _, p := range []string{"/files/a.txt", "/nope"} {
		e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, p, nil))
	}
	if got, want := fmt.Sprintf("%q", routes), `["/files/*" ""]`; got != want {
		t.Errorf("routes of /files/a.txt (a RouteNotFound route) and /nope: %s, want %s", got, want)
	}
}
