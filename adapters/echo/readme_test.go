package echolimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/a7d3e0dd/ratelimit"
	echolimit "github.com/a7d3e0dd/ratelimit/adapters/echo"
	"github.com/a7d3e0dd/ratelimit/internal/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/readmetest"
)

// readmeSetup is README's Echo v4 code in "Gin, Echo and Fiber", as written, over the server,
// limiter and login handler it names.
func readmeSetup(e *echo.Echo, limiter *ratelimit.Limiter, login echo.HandlerFunc) {
	e.Use(echolimit.New(limiter))
	e.POST("/login", login, echolimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})))
	// in a handler: d, ok := echolimit.Decision(c)
}

// TestReadmeSetup runs README's Echo v4 code as written: the login route admits 5 a minute
// per client, refuses the 6th with 429 and Retry-After without calling the handler, and
// answers as net/http's middleware does with the same options (the same status, headers and
// body); the handler reads the login policy's decision.
func TestReadmeSetup(t *testing.T) {
	readmetest.Same(t, "Echo v4 code", readmetest.FuncBody(t, "readme_test.go", "readmeSetup"),
		readmetest.Code(readmetest.Containing(t, "../../README.md", `e.POST("/login", login, echolimit.New(`, "go")))

	clock := fakeclock.New(fakeclock.T0)
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 100, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	var left []int64
	readmeSetup(e, limiter, func(c echo.Context) error {
		d, ok := echolimit.Decision(c)
		if ok {
			left = append(left, d.Remaining)
		}
		return c.String(http.StatusOK, "welcome\n")
	})

	// The same, over net/http's middleware and a limiter of its own.
	refLimiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 100, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /login", ratelimit.Middleware(refLimiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute}))(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
			w.Write([]byte("welcome\n"))
		})))
	ref := ratelimit.Middleware(refLimiter)(mux)

	send := func(h http.Handler, ip string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/login", nil)
		req.RemoteAddr = ip + ":1000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for i := range 6 {
		got, want := send(e, "192.0.2.1"), send(ref, "192.0.2.1")
		if wantCode := map[bool]int{true: 200, false: 429}[i < 5]; got.Code != wantCode {
			t.Fatalf("login %d: %d; want %d", i+1, got.Code, wantCode)
		}
		if got.Code != want.Code || got.Body.String() != want.Body.String() || !sameHeaders(got.Header(), want.Header()) {
			t.Errorf("login %d: Echo answered %d %v %q; net/http %d %v %q", i+1, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
		if i == 5 && (got.Header().Get("Retry-After") != "12" || got.Header().Get("X-RateLimit-Limit") != "5") {
			t.Errorf("the 6th login in a minute: Retry-After %q, X-RateLimit-Limit %q; want 12 (5 a minute), 5", got.Header().Get("Retry-After"), got.Header().Get("X-RateLimit-Limit"))
		}
	}
	if fmt.Sprint(left) != "[4 3 2 1 0]" {
		t.Errorf("the handler ran with Remaining %v; want [4 3 2 1 0]: five logins, each with the login policy's decision", left)
	}
	if w := send(e, "192.0.2.2"); w.Code != http.StatusOK {
		t.Errorf("another client's login: %d; want 200", w.Code)
	}
	clock.Advance(12 * time.Second)
	if w := send(e, "192.0.2.1"); w.Code != http.StatusOK {
		t.Errorf("a login after Retry-After: %d; want 200", w.Code)
	}
}

// sameHeaders reports whether two responses have the same header fields and values.
func sameHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
