package echov5limit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/a7d3e0dd/ratelimit"
	echov5limit "github.com/a7d3e0dd/ratelimit/adapters/echov5"
	"github.com/a7d3e0dd/ratelimit/internal/testing/hijacktest"
)

// TestCountIfSeesTheFinalStatus checks that CountIf is given the status the client got, not an
// interim one: a handler that sends 103 Early Hints before its answer is counted by the 200
// that follows (net/http sends 1xx as interim responses), as the net/http middleware counts
// it; also for a HEAD that Echo serves with a GET route (the status then goes through the
// adapter's own recorder).
func TestCountIfSeesTheFinalStatus(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		for _, route := range []bool{false, true} {
			l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 10, Window: time.Minute})
			seen := make(chan int, 1)
			mw := echov5limit.New(l, ratelimit.CountIf(func(status int) bool { seen <- status; return true }))
			h := func(c *echo.Context) error {
				c.Response().Header().Set("Link", "</style.css>; rel=preload; as=style")
				c.Response().WriteHeader(http.StatusEarlyHints)
				return c.String(http.StatusOK, "ok")
			}
			e := echo.NewWithConfig(echo.Config{Router: echo.NewRouter(echo.RouterConfig{AutoHandleHEAD: true})})
			if route {
				e.GET("/", h, mw)
			} else {
				e.Use(mw)
				e.GET("/", h)
			}
			srv := httptest.NewServer(e)
			req, _ := http.NewRequest(method, srv.URL, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			srv.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s, route middleware %v: the client got %d, want 200", method, route, resp.StatusCode)
			}
			if got := <-seen; got != http.StatusOK {
				t.Errorf("%s, route middleware %v: CountIf was given %d, want the 200 the client got", method, route, got)
			}
		}
	}
}

// A handler that takes the connection over (a WebSocket upgrade: Hijack, then its own
// answer on the wire) is counted by 101 Switching Protocols, as the net/http middleware counts
// it: Echo's Response, never written to, says 200. Also for a HEAD that Echo serves with a GET
// route (the adapter's own recorder stands in front of the Response then).
func TestCountIfSeesAHijack(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 10, Window: time.Minute})
		seen := make(chan int, 1)
		mw := echov5limit.New(l, ratelimit.CountIf(func(status int) bool { seen <- status; return true }))
		e := echo.NewWithConfig(echo.Config{Router: echo.NewRouter(echo.RouterConfig{AutoHandleHEAD: true})})
		e.GET("/", func(c *echo.Context) error {
			conn, rw, err := http.NewResponseController(c.Response()).Hijack()
			if err != nil {
				return err
			}
			defer conn.Close()
			rw.WriteString(hijacktest.Answer)
			return rw.Flush()
		}, mw)
		srv := httptest.NewServer(e)
		resp := hijacktest.Upgrade(t, srv.Listener.Addr().String(), method)
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("%s: the client got %d, want the handler's 101", method, resp.StatusCode)
		}
		if got := <-seen; got != http.StatusSwitchingProtocols {
			t.Errorf("%s: CountIf was given %d, want 101, as behind ratelimit.Middleware", method, got)
		}
		srv.Close()
	}
}
