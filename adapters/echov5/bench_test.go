package echov5limit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/echov5"
)

// discardWriter is the cheapest http.ResponseWriter, so a benchmark measures the router.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkEcho measures an Echo v5 route bare and behind echov5limit.New with the memory store
// and one policy that admits every request: the overhead per request is limited minus bare
// (compare BenchmarkMiddleware of the core for net/http). limited includes handing the decision
// to the handler (a copy of it and c.Set, whose map Echo v5 keeps, cleared, on its pooled
// Context); the handler of limited-decision also reads it with Decision.
func BenchmarkEcho(b *testing.B) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1e9, Window: time.Hour})
	ok := func(c *echo.Context) error { return c.NoContent(http.StatusOK) }
	bare := echo.New()
	bare.GET("/", ok)
	limited := echo.New()
	limited.Use(echov5limit.New(l))
	limited.GET("/", ok)
	reads := echo.New()
	reads.Use(echov5limit.New(l))
	reads.GET("/", func(c *echo.Context) error {
		if d, ok := echov5limit.Decision(c); !ok || d.Remaining < 0 {
			panic("no decision")
		}
		return c.NoContent(http.StatusOK)
	})
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"bare", bare}, {"limited", limited}, {"limited-decision", reads}} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = "192.0.2.1:1234"
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				bc.h.ServeHTTP(w, r)
			}
		})
	}
}
