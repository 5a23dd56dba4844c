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

// TestCountIfHeadOfGetRoute checks that a HEAD request Echo v5 serves with a GET route's
// handler (RouterConfig.AutoHandleHEAD) is counted by the status it gets, also by a per-route
// limit: Echo's HEAD writer hands the status to Echo's Response only after the route's
// middleware returns. Under CountIf(401) and a limit of 1, the first 401 is counted and the
// next request refused; a HEAD counted as 200 would be refunded and never refused.
func TestCountIfHeadOfGetRoute(t *testing.T) {
	for _, route := range []bool{false, true} {
		for _, asError := range []bool{false, true} {
			l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute})
			mw := echov5limit.New(l, ratelimit.CountIf(func(status int) bool { return status == http.StatusUnauthorized }))
			h := func(c *echo.Context) error {
				if asError {
					return echo.NewHTTPError(http.StatusUnauthorized, "")
				}
				return c.NoContent(http.StatusUnauthorized)
			}
			e := echo.NewWithConfig(echo.Config{Router: echo.NewRouter(echo.RouterConfig{AutoHandleHEAD: true})})
			if route {
				e.GET("/me", h, mw)
			} else {
				e.Use(mw)
				e.GET("/me", h)
			}
			var got []int
			for range 2 {
				w := httptest.NewRecorder()
				e.ServeHTTP(w, httptest.NewRequest(http.MethodHead, "/me", nil))
				got = append(got, w.Code)
			}
			if got, want := fmt.Sprint(got), "[401 429]"; got != want {
				t.Errorf("route middleware %v, handler's error %v: HEAD /me twice: %s, want %s", route, asError, got, want)
			}
		}
	}
}
