package ginlimit_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/gin"
	"github.com/a7d3e0dd/ratelimit/cost"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// A handler that panics after answering — with http.ErrAbortHandler, as httputil.ReverseProxy
// does when its client goes away mid-stream, or a cleanup failing — was served as far as it
// got: it is charged what it reported, not as a failure of the server; a handler that panics
// before answering is a 500, charged nothing.
func TestChargeAfterPanics(t *testing.T) {
	for _, c := range []struct {
		name   string
		panic  any
		answer bool  // the handler writes its answer before it panics
		want   int64 // charged
	}{
		{"aborted", http.ErrAbortHandler, true, 30},
		{"failed after answering", "a cleanup failed", true, 30},
		{"failed before answering", "the handler failed", false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := mustNew(ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0))), ratelimit.Policy{Limit: 100, Window: time.Minute})
			r := gin.New()
			r.Use(func(ctx *gin.Context) { // a recovery in front, as gin.Recovery is
				defer func() { recover() }()
				ctx.Next()
			})
			r.Use(ginlimit.New(l, ratelimit.WithCost(func(ratelimit.Request) int64 { return 20 }), ratelimit.ChargeAfter(cost.Reported)))
			r.GET("/", func(ctx *gin.Context) {
				if c.answer {
					io.WriteString(ctx.Writer, "data: token\n\n")
				}
				cost.Report(ctx.Request.Context(), 30)
				panic(c.panic)
			})
			r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
			d, err := l.AllowN(t.Context(), "ip:192.0.2.1", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := 100 - d.Remaining; got != c.want {
				t.Errorf("charged %d, want %d", got, c.want)
			}
		})
	}
}
