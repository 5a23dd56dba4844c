package ratelimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/httpspec"
)

// TestHTTPSpec runs the HTTP spec table through the net/http middleware, against every engine:
// around the whole mux, behind the authentication middleware when the case asks for it, and on
// the POST /login handler for the per-route limit.
func TestHTTPSpec(t *testing.T) {
	specEngines := make([]httpspec.Engine, len(engines))
	for i, e := range engines {
		specEngines[i] = httpspec.Engine{Name: e.name, Store: func(t *testing.T, clock ratelimit.Clock) ratelimit.Store {
			return e.store(t, ratelimit.WithClock(clock))
		}}
	}
	httpspec.Run(t, func(t *testing.T, c httpspec.Config) httpspec.Server {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			status, _ := c.Reply(r.Context(), r.URL.RawQuery) // no error path in net/http: write the status
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
		if c.Auth {
			srv = authenticate(srv)
		}
		return func(r *http.Request) *http.Response {
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			return w.Result()
		}
	}, specEngines...)
}

// authenticate is the authentication middleware of httpspec.Config.Auth: it stores the
// X-User header, when there is one, under httpspec.UserKey in the request's context.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user := r.Header.Get("X-User"); user != "" {
			r = r.WithContext(context.WithValue(r.Context(), httpspec.UserKey, user))
		}
		next.ServeHTTP(w, r)
	})
}
