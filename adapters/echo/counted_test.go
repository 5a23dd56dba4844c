package echolimit_test

import (
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/a7d3e0dd/ratelimit"
	echolimit "github.com/a7d3e0dd/ratelimit/adapters/echo"
	"github.com/a7d3e0dd/ratelimit/internal/testing/httpspec"
)

// A login behind net/http's middleware around the Echo server, then the route's Echo guard, is
// one request to the observer.
func TestNetHTTPAroundEchoCountsOnce(t *testing.T) {
	httpspec.LoginCountedOnce(t, func(l *ratelimit.Limiter, login ...ratelimit.Option) http.Handler {
		e := echo.New()
		e.POST("/login", func(c echo.Context) error { return c.NoContent(http.StatusOK) }, echolimit.New(l, login...))
		return e
	})
}
