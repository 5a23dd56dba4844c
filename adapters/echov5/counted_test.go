package echov5limit_test

import (
	"net/http"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/a7d3e0dd/ratelimit"
	echov5limit "github.com/a7d3e0dd/ratelimit/adapters/echov5"
	"github.com/a7d3e0dd/ratelimit/internal/testing/httpspec"
)

// A login behind net/http's middleware around the Echo v5 server, then the route's Echo guard,
// is one request to the observer.
func TestNetHTTPAroundEchoCountsOnce(t *testing.T) {
	httpspec.LoginCountedOnce(t, func(l *ratelimit.Limiter, login ...ratelimit.Option) http.Handler {
		e := echo.New()
		e.POST("/login", func(c *echo.Context) error { return c.NoContent(http.StatusOK) }, echov5limit.New(l, login...))
		return e
	})
}
