package httpspec

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// Handle is the handler of [Panics]' route: it writes its answer's body to w (the framework's
// writer), reports its cost on ctx (the context the framework hands a handler) and panics.
type Handle func(ctx context.Context, w io.Writer)

// Panics holds a framework's middleware to what a guard charging after the response
// (ratelimit.ChargeAfter, cost.Reported) makes of a handler that panics: after answering —
// with http.ErrAbortHandler, as httputil.ReverseProxy does when its client goes away
// mid-stream, or a cleanup failing — it was served as far as it got and is charged what it
// reported; before answering, it is a 500, charged nothing. serve returns the application: a
// recovery in front (as the framework's own), the middleware of l with opts, and GET / whose
// handler calls handle.
func Panics(t *testing.T, serve func(l *ratelimit.Limiter, opts []ratelimit.Option, handle Handle) http.Handler) {
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
			l, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0))), ratelimit.Policy{Limit: 100, Window: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			opts := []ratelimit.Option{ratelimit.WithCost(func(ratelimit.Request) int64 { return 20 }), ratelimit.ChargeAfter(cost.Reported)}
			app := serve(l, opts, func(ctx context.Context, w io.Writer) {
				if c.answer {
					_, _ = io.WriteString(w, "data: token\n\n")
				}
				cost.Report(ctx, 30)
				panic(c.panic)
			})
			app.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
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
