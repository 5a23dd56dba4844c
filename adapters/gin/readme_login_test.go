package ginlimit_test

import (
	"bytes"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/a7d3e0dd/ratelimit"
	ginlimit "github.com/a7d3e0dd/ratelimit/adapters/gin"
	"github.com/a7d3e0dd/ratelimit/internal/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/readmetest"
)

// readmeSetup is README's Gin code in "Gin, Echo and Fiber", as written, over the router,
// limiter and login handler it names; readmeInAHandler is its last lines, which run in a
// handler.
func readmeSetup(r *gin.Engine, limiter *ratelimit.Limiter, login gin.HandlerFunc) {
	r.Use(ginlimit.New(limiter))
	r.POST("/login", ginlimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})), login)
}

func readmeInAHandler(c *gin.Context) {
	// in a handler:
	if d, ok := ginlimit.Decision(c); ok {
		log.Printf("%d left", d.Remaining)
	}
}

// TestReadmeSetup runs README's Gin code as written (gofmt's layout of its last line): the
// login route admits 5 a minute per client, refuses the 6th with 429 and Retry-After without
// calling the handler, and answers as net/http's middleware does with the same options (the
// same status, headers and body); the handler reads the login policy's decision.
func TestReadmeSetup(t *testing.T) {
	want := readmetest.Gofmt(t, readmetest.Code(readmetest.Containing(t, "../../README.md", `r.POST("/login", ginlimit.New(`, "go")))
	readmetest.Same(t, "Gin code", append(readmetest.FuncBody(t, "readme_login_test.go", "readmeSetup"), readmetest.FuncBody(t, "readme_login_test.go", "readmeInAHandler")...), want)

	var logged bytes.Buffer
	log.SetOutput(&logged)
	log.SetFlags(0)
	t.Cleanup(func() {
		log.SetOutput(os.Stderr)
		log.SetFlags(log.LstdFlags)
	})

	clock := fakeclock.New(fakeclock.T0)
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 100, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.TestMode)
	r := gin.New()
	logins := 0
	readmeSetup(r, limiter, func(c *gin.Context) {
		readmeInAHandler(c)
		logins++
		c.String(http.StatusOK, "welcome\n")
	})

	// The same, over net/http's middleware and a limiter of its own.
	refLimiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 100, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /login", ratelimit.Middleware(refLimiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute}))(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("welcome\n")) })))
	ref := ratelimit.Middleware(refLimiter)(mux)

	send := func(h http.Handler, ip string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/login", nil)
		req.RemoteAddr = ip + ":1000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for i := range 6 {
		got, want := send(r, "192.0.2.1"), send(ref, "192.0.2.1")
		if wantCode := map[bool]int{true: 200, false: 429}[i < 5]; got.Code != wantCode {
			t.Fatalf("login %d: %d; want %d", i+1, got.Code, wantCode)
		}
		if got.Code != want.Code || got.Body.String() != want.Body.String() || !sameHeaders(got.Header(), want.Header()) {
			t.Errorf("login %d: Gin answered %d %v %q; net/http %d %v %q", i+1, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
		if i == 5 && (got.Header().Get("Retry-After") != "12" || got.Header().Get("X-RateLimit-Limit") != "5") {
			t.Errorf("the 6th login in a minute: Retry-After %q, X-RateLimit-Limit %q; want 12 (5 a minute), 5", got.Header().Get("Retry-After"), got.Header().Get("X-RateLimit-Limit"))
		}
	}
	if logins != 5 {
		t.Errorf("the login handler ran %d times; want 5 (Gin aborts the refused request)", logins)
	}
	if want := "4 left\n3 left\n2 left\n1 left\n0 left\n"; logged.String() != want {
		t.Errorf("the handler logged %q; want %q (the login policy's decision)", logged.String(), want)
	}
	if w := send(r, "192.0.2.2"); w.Code != http.StatusOK {
		t.Errorf("another client's login: %d; want 200", w.Code)
	}
	clock.Advance(12 * time.Second)
	if w := send(r, "192.0.2.1"); w.Code != http.StatusOK {
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
