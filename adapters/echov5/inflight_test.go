package echov5limit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/echov5"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// An in-flight slot comes back when the handler returns, also when it panics (behind Echo's
// Recover) or returns an error: with one slot, every request in turn is served; a slot that
// leaked would refuse the next with 429. A request arriving while the slot is held is refused.
func TestInFlightSlotComesBack(t *testing.T) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	e := echo.New()
	e.Use(middleware.Recover(), echov5limit.New(l))
	e.GET("/panic", func(*echo.Context) error { panic("boom") })
	e.GET("/fail", func(*echo.Context) error { return echo.NewHTTPError(http.StatusBadGateway, "") })
	e.GET("/ok", func(c *echo.Context) error { return c.NoContent(http.StatusOK) })
	e.GET("/nested", func(c *echo.Context) error { // a second request while this one holds the slot
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/ok", nil))
		return c.NoContent(w.Code)
	})
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/panic", 500}, {"/panic", 500}, {"/fail", 502}, {"/ok", 200}, {"/nested", 429}, {"/ok", 200},
	} {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if w.Code != tc.want {
			t.Fatalf("GET %s: %d; want %d", tc.path, w.Code, tc.want)
		}
	}
}
