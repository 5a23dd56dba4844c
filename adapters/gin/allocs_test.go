//go:build !race

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

// TestAllocations holds the middleware to its allocations per request, the memory store's
// included (not under the race detector, which allocates more). A refused request allocates
// no outcome: only one that proceeds keeps it (with c.Set, for a guard after this one), so a
// skipped one costs the outcome and Gin's map of values.
func TestAllocations(t *testing.T) {
	skip := ratelimit.WithAccess(ratelimit.Access{Skip: func(ratelimit.Request) bool { return true }})
	for _, c := range []struct {
		name  string
		limit int64
		opts  []ratelimit.Option
		want  float64
	}{
		{"admitted", 1e9, nil, 6},
		{"denied", 1, nil, 4},
		{"skipped", 1e9, []ratelimit.Option{skip}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := gin.New()
			e.Use(ginlimit.New(mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: c.limit, Window: time.Hour}), c.opts...))
			e.GET("/", func(c *gin.Context) { c.Status(http.StatusOK) })
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			w := &discardWriter{h: http.Header{}}
			e.ServeHTTP(w, r) // the first request: a limit of 1 denies from the next one
			if got := testing.AllocsPerRun(200, func() { clear(w.h); e.ServeHTTP(w, r) }); got > c.want {
				t.Errorf("%v allocations per request, want at most %v", got, c.want)
			}
		})
	}
}
