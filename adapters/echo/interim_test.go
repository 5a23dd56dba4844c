package echolimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/a7d3e0dd/ratelimit"
	echolimit "github.com/a7d3e0dd/ratelimit/adapters/echo"
	"github.com/a7d3e0dd/ratelimit/internal/testing/hijacktest"
)

// TestCountIfSeesTheFinalStatus checks that CountIf is given the status the client got, not an
// interim one: a handler that sends 103 Early Hints before its answer is counted by the 200
// that follows (net/http sends 1xx as interim responses), as the net/http middleware counts it.
func TestCountIfSeesTheFinalStatus(t *testing.T) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 10, Window: time.Minute})
	seen := make(chan int, 1)
	e := echo.New()
	e.Use(echolimit.New(l, ratelimit.CountIf(func(status int) bool { seen <- status; return true })))
	e.GET("/", func(c echo.Context) error {
		c.Response().Header().Set("Link", "</style.css>; rel=preload; as=style")
		c.Response().WriteHeader(http.StatusEarlyHints)
		return c.String(http.StatusOK, "ok")
	})
	srv := httptest.NewServer(e)
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the client got %d, want 200", resp.StatusCode)
	}
	if got := <-seen; got != http.StatusOK {
		t.Errorf("CountIf was given %d, want the 200 the client got", got)
	}
}

// A handler that takes the connection over (a WebSocket upgrade: Hijack, then its own
// answer on the wire) is counted by 101 Switching Protocols, as the net/http middleware counts
// it: Echo's Response, never written to, says 200.
func TestCountIfSeesAHijack(t *testing.T) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 10, Window: time.Minute})
	seen := make(chan int, 1)
	e := echo.New()
	e.Use(echolimit.New(l, ratelimit.CountIf(func(status int) bool { seen <- status; return true })))
	e.GET("/", func(c echo.Context) error {
		conn, rw, err := c.Response().Hijack()
		if err != nil {
			return err
		}
		defer conn.Close()
		rw.WriteString(hijacktest.Answer)
		return rw.Flush()
	})
	srv := httptest.NewServer(e)
	defer srv.Close()
	resp := hijacktest.Upgrade(t, srv.Listener.Addr().String(), http.MethodGet)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("the client got %d, want the handler's 101", resp.StatusCode)
	}
	if got := <-seen; got != http.StatusSwitchingProtocols {
		t.Errorf("CountIf was given %d, want 101, as behind ratelimit.Middleware", got)
	}
}
