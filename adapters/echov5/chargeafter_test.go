package echov5limit_test

import (
	"net/http"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/echov5"
	"github.com/a7d3e0dd/ratelimit/internal/testing/httpspec"
)

// A handler that panics, charged after the response: what it served is charged, a failure
// before answering is not (httpspec.Panics).
func TestChargeAfterPanics(t *testing.T) {
	httpspec.Panics(t, func(l *ratelimit.Limiter, opts []ratelimit.Option, handle httpspec.Handle) http.Handler {
		e := echo.New()
		e.Use(func(next echo.HandlerFunc) echo.HandlerFunc { // a recovery in front, as Echo's Recover is
			return func(ctx *echo.Context) error {
				defer func() { recover() }()
				return next(ctx)
			}
		})
		e.Use(echov5limit.New(l, opts...))
		e.GET("/", func(ctx *echo.Context) error { handle(ctx.Request().Context(), ctx.Response()); return nil })
		return e
	})
}
