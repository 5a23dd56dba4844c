package fiberlimit_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/a7d3e0dd/ratelimit"
	fiberlimit "github.com/a7d3e0dd/ratelimit/adapters/fiber"
	"github.com/a7d3e0dd/ratelimit/internal/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/readmetest"
)

// readmeSetup is README's Fiber v2 code in "Gin, Echo and Fiber", as written, over the app,
// limiter and login handler it names.
func readmeSetup(app *fiber.App, limiter *ratelimit.Limiter, login fiber.Handler) {
	app.Use(fiberlimit.New(limiter))
	app.Post("/login", fiberlimit.New(limiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute})), login)
	// in a handler: d, ok := fiberlimit.Decision(c)
}

// TestReadmeSetup runs README's Fiber v2 code as written: the login route admits 5 a minute
// per client, refuses the 6th with 429 and Retry-After without calling the handler, and
// answers as net/http's middleware does with the same options (the same status, body and
// headers, but those fasthttp adds); the handler reads the login policy's decision.
func TestReadmeSetup(t *testing.T) {
	readmetest.Same(t, "Fiber v2 code", readmetest.FuncBody(t, "readme_test.go", "readmeSetup"),
		readmetest.Code(readmetest.Containing(t, "../../README.md", `app.Post("/login", fiberlimit.New(`, "go")))

	clock := fakeclock.New(fakeclock.T0)
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 100, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New()
	app.Use(func(c *fiber.Ctx) error { // the client's address, which app.Test does not set
		c.Context().SetRemoteAddr(net.TCPAddrFromAddrPort(netip.MustParseAddrPort(c.Get(remoteAddrHeader))))
		return c.Next()
	})
	var left []int64
	readmeSetup(app, limiter, func(c *fiber.Ctx) error {
		if d, ok := fiberlimit.Decision(c); ok {
			left = append(left, d.Remaining)
		}
		return c.SendString("welcome\n")
	})

	// The same, over net/http's middleware and a limiter of its own.
	refLimiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 100, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /login", ratelimit.Middleware(refLimiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute}))(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write([]byte("welcome\n"))
		})))
	ref := ratelimit.Middleware(refLimiter)(mux)

	type response struct {
		code   int
		header http.Header
		body   string
	}
	send := func(ip string) response {
		req := httptest.NewRequest("POST", "/login", nil)
		req.Header.Set(remoteAddrHeader, ip+":1000")
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Header.Del("Content-Length") // fasthttp's, which net/http's recorder does not add
		resp.Header.Del("Date")
		return response{resp.StatusCode, resp.Header, string(body)}
	}
	sendRef := func(ip string) response {
		req := httptest.NewRequest("POST", "/login", nil)
		req.RemoteAddr = ip + ":1000"
		w := httptest.NewRecorder()
		ref.ServeHTTP(w, req)
		return response{w.Code, w.Header(), w.Body.String()}
	}
	for i := range 6 {
		got, want := send("192.0.2.1"), sendRef("192.0.2.1")
		if wantCode := map[bool]int{true: 200, false: 429}[i < 5]; got.code != wantCode {
			t.Fatalf("login %d: %d; want %d", i+1, got.code, wantCode)
		}
		if got.code != want.code || got.body != want.body || !sameHeaders(got.header, want.header) {
			t.Errorf("login %d: Fiber answered %d %v %q; net/http %d %v %q", i+1, got.code, got.header, got.body, want.code, want.header, want.body)
		}
		if i == 5 && (got.header.Get("Retry-After") != "12" || got.header.Get("X-RateLimit-Limit") != "5") {
			t.Errorf("the 6th login in a minute: Retry-After %q, X-RateLimit-Limit %q; want 12 (5 a minute), 5", got.header.Get("Retry-After"), got.header.Get("X-RateLimit-Limit"))
		}
	}
	if fmt.Sprint(left) != "[4 3 2 1 0]" {
		t.Errorf("the handler ran with Remaining %v; want [4 3 2 1 0]: five logins, each with the login policy's decision", left)
	}
	if r := send("192.0.2.2"); r.code != http.StatusOK {
		t.Errorf("another client's login: %d; want 200", r.code)
	}
	clock.Advance(12 * time.Second)
	if r := send("192.0.2.1"); r.code != http.StatusOK {
		t.Errorf("a login after Retry-After: %d; want 200", r.code)
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
