package ginlimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/gin"
)

// discardWriter is the cheapest http.ResponseWriter, so a benchmark measures the router.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkGin measures a Gin route bare and behind ginlimit.New with the memory store and one
// policy that admits every request: the overhead per request is limited minus bare (compare
// BenchmarkMiddleware of the core for net/http). limited includes handing the decision to the
// handler (a copy of it and c.Set, whose map Gin makes anew for every request); the handler of
// limited-decision also reads it with Decision.
func BenchmarkGin(b *testing.B) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1e9, Window: time.Hour})
	ok := func(c *gin.Context) { c.Status(http.StatusOK) }
	bare := gin.New()
	bare.GET("/", ok)
	limited := gin.New()
	limited.Use(ginlimit.New(l))
	limited.GET("/", ok)
	reads := gin.New()
	reads.Use(ginlimit.New(l))
	reads.GET("/", func(c *gin.Context) {
		if d, ok := ginlimit.Decision(c); !ok || d.Remaining < 0 {
			panic("no decision")
		}
		c.Status(http.StatusOK)
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
