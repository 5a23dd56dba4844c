package ginlimit_test

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/gin"
	"github.com/a7d3e0dd/ratelimit/internal/testing/httpspec"
)

// A handler that panics, charged after the response: what it served is charged, a failure
// before answering is not (httpspec.Panics).
func TestChargeAfterPanics(t *testing.T) {
	httpspec.Panics(t, func(l *ratelimit.Limiter, opts []ratelimit.Option, handle httpspec.Handle) http.Handler {
		r := gin.New()
		r.Use(func(ctx *gin.Context) { // a recovery in front, as gin.Recovery is
			defer func() { recover() }()
			ctx.Next()
		})
		r.Use(ginlimit.New(l, opts...))
		r.GET("/", func(ctx *gin.Context) { handle(ctx.Request.Context(), ctx.Writer) })
		return r
	})
}
