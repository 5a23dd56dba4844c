package ginlimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/gin"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// An in-flight slot comes back when the handler returns, also when it panics (behind Gin's
// Recovery) or fails: with one slot, every request in turn is served; a slot that leaked would
// refuse the next with 429. A request arriving while the slot is held is refused.
func TestInFlightSlotComesBack(t *testing.T) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	r := gin.New()
	r.Use(gin.Recovery(), ginlimit.New(l))
	var inner http.Handler = r
	r.GET("/panic", func(*gin.Context) { panic("boom") })
	r.GET("/fail", func(c *gin.Context) { c.AbortWithStatus(http.StatusBadGateway) })
	r.GET("/ok", func(c *gin.Context) { c.Status(http.StatusOK) })
	r.GET("/nested", func(c *gin.Context) { // a second request while this one holds the slot
		w := httptest.NewRecorder()
		inner.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/ok", nil))
		c.Status(w.Code)
	})
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/panic", 500}, {"/panic", 500}, {"/fail", 502}, {"/ok", 200}, {"/nested", 429}, {"/ok", 200},
	} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if w.Code != tc.want {
			t.Fatalf("GET %s: %d; want %d", tc.path, w.Code, tc.want)
		}
	}
}
