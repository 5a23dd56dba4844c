// Package readmelogin is the scenario of the login example of docs/frameworks.md, which every
// HTTP adapter's README test runs over the application it builds with the guide's code as
// written: the login route admits 5 a minute per client, refuses the 6th with 429 and
// Retry-After without calling the handler, and answers as net/http's middleware does with the
// same options (the same status, headers and body); the handler reads the login policy's
// decision.
package readmelogin

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// App is an application built with the guide's login example, in one framework.
type App struct {
	// Name is the framework, as the failure messages name it: "Echo v5".
	Name string
	// Serve sends the application a request, whose RemoteAddr is the client's address, and
	// returns its response, with the headers to compare with net/http's (a framework's own,
	// which net/http's recorder does not add, taken out).
	Serve func(*http.Request) *http.Response
	// ContentType is the Content-Type the reference login handler sets, the one the
	// framework's handler answers with (Echo's "text/plain; charset=UTF-8"); "" sets none,
	// leaving it to net/http.
	ContentType string
	// Remaining, when set, returns the Remaining of the decisions the login handler read, in
	// order: Run wants [4 3 2 1 0] after the six logins.
	Remaining func() []int64
	// Handled, when set, checks what the login handler did with the six logins (Gin's, which
	// logs the decision it reads); Run calls it after them, before any other login.
	Handled func(t testing.TB)
}

// NewLimiter returns the limiter of the guide's example, whose options the login route adds its
// policy to: 100 a minute, over a memory store on clock.
func NewLimiter(t testing.TB, clock *fakeclock.Clock) *ratelimit.Limiter {
	t.Helper()
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 100, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return limiter
}

// Recorded returns a Serve of h through net/http's response recorder: the status, the header
// map as the handler left it, and the body.
func Recorded(h http.Handler) func(*http.Request) *http.Response {
	return func(req *http.Request) *http.Response {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return &http.Response{StatusCode: w.Code, Header: w.Header(), Body: io.NopCloser(w.Body)}
	}
}

// Run sends app six logins from one client, each beside the same login to the same routes over
// net/http's middleware (a limiter of its own on clock), and wants the same responses, the
// first five admitted and the 6th refused with Retry-After 12 and X-RateLimit-Limit 5; then
// what the handler saw (app.Remaining, app.Handled); another client's login admitted; and,
// the clock moved 12 s on, the first client's.
func Run(t *testing.T, clock *fakeclock.Clock, app App) {
	t.Helper()
	if app.Remaining == nil && app.Handled == nil {
		t.Fatal("readmelogin.Run: the App tells nothing of what its login handler saw (Remaining, Handled)")
	}
	refLimiter := NewLimiter(t, clock)
	mux := http.NewServeMux()
	mux.Handle("POST /login", ratelimit.Middleware(refLimiter, ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute}))(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if app.ContentType != "" {
				w.Header().Set("Content-Type", app.ContentType)
			}
			w.Write([]byte("welcome\n"))
		})))
	ref := Recorded(ratelimit.Middleware(refLimiter)(mux))

	type response struct {
		code   int
		header http.Header
		body   string
	}
	send := func(serve func(*http.Request) *http.Response, ip string) response {
		t.Helper()
		req := httptest.NewRequest("POST", "/login", nil)
		req.RemoteAddr = ip + ":1000"
		resp := serve(req)
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return response{resp.StatusCode, resp.Header, string(body)}
	}
	for i := range 6 {
		got, want := send(app.Serve, "192.0.2.1"), send(ref, "192.0.2.1")
		if wantCode := map[bool]int{true: 200, false: 429}[i < 5]; got.code != wantCode {
			t.Fatalf("login %d: %d; want %d", i+1, got.code, wantCode)
		}
		if got.code != want.code || got.body != want.body || !sameHeaders(got.header, want.header) {
			t.Errorf("login %d: %s answered %d %v %q; net/http %d %v %q", i+1, app.Name, got.code, got.header, got.body, want.code, want.header, want.body)
		}
		if i == 5 && (got.header.Get("Retry-After") != "12" || got.header.Get("X-RateLimit-Limit") != "5") {
			t.Errorf("the 6th login in a minute: Retry-After %q, X-RateLimit-Limit %q; want 12 (5 a minute), 5", got.header.Get("Retry-After"), got.header.Get("X-RateLimit-Limit"))
		}
	}
	if app.Remaining != nil {
		if left := app.Remaining(); fmt.Sprint(left) != "[4 3 2 1 0]" {
			t.Errorf("the handler ran with Remaining %v; want [4 3 2 1 0]: five logins, each with the login policy's decision", left)
		}
	}
	if app.Handled != nil {
		app.Handled(t)
	}
	if r := send(app.Serve, "192.0.2.2"); r.code != http.StatusOK {
		t.Errorf("another client's login: %d; want 200", r.code)
	}
	clock.Advance(12 * time.Second)
	if r := send(app.Serve, "192.0.2.1"); r.code != http.StatusOK {
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
