package ginlimit_test

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/gin"
	"github.com/a7d3e0dd/ratelimit/internal/testing/httpspec"
)

// A login behind net/http's middleware around the Gin engine, then the route's Gin guard, is
// one request to the observer.
func TestNetHTTPAroundGinCountsOnce(t *testing.T) {
	httpspec.LoginCountedOnce(t, func(l *ratelimit.Limiter, login ...ratelimit.Option) http.Handler {
		e := gin.New()
		e.POST("/login", ginlimit.New(l, login...), func(c *gin.Context) { c.Status(http.StatusOK) })
		return e
	})
}
