package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/httpspec"
)

// TestHTTPSpec runs the HTTP spec table through the net/http middleware: around the whole mux,
// and on the POST /login handler for the per-route limit.
func TestHTTPSpec(t *testing.T) {
	httpspec.Run(t, func(t *testing.T, c httpspec.Config) httpspec.Server {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			status, _ := c.Reply(r.URL.RawQuery) // no error path in net/http: write the status
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(status)
			_, _ = w.Write([]byte("ok"))
		})
		mux := http.NewServeMux()
		mux.Handle("GET /items/{id}", h)
		mux.Handle("GET /health", h)
		if c.Login != nil {
			mux.Handle("POST /login", ratelimit.Middleware(c.Limiter, c.Login...)(h))
		} else {
			mux.Handle("POST /login", h)
		}
		srv := ratelimit.Middleware(c.Limiter, c.Options...)(mux)
		return func(r *http.Request) *http.Response {
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			return w.Result()
		}
	})
}
