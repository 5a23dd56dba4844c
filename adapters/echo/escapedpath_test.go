package echolimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/echo"
)

// TestEscapedPath checks that the adapter's requests tell the path as the client escaped it,
// on which Echo routes: what picks a limit by route (a Switch, the rules engine) sees
// "/search/x%2Fy", the request of "/search/:q", not "/search/x/y", which no route matches.
func TestEscapedPath(t *testing.T) {
	var seen string
	pick := ratelimit.Switch(func(r ratelimit.Request) *ratelimit.Guard {
		if e, ok := r.(interface{ EscapedPath() string }); ok {
			seen = e.EscapedPath()
		}
		return nil
	})
	e := echo.New()
	e.Use(echolimit.FromGuard(pick))
	e.GET("/search/:q", func(c echo.Context) error { return c.String(http.StatusOK, c.Param("q")) })
	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/search/x%2Fy", nil))
	if w.Code != http.StatusOK || seen != "/search/x%2Fy" {
		t.Errorf("GET /search/x%%2Fy: %d, the guard saw the escaped path %q; want 200 and %q", w.Code, seen, "/search/x%2Fy")
	}
}
