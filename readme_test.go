package ratelimit_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// readmeUseIt is README's "Use it" code, as written, but for its last line: it returns the
// handler that README passes to http.ListenAndServe. TestReadmeUseItAsWritten keeps the two
// the same.
func readmeUseIt(loginHandler http.Handler) http.Handler {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(),
		ratelimit.Policy{Limit: 10, Window: time.Second},
		ratelimit.Policy{Limit: 1000, Window: time.Hour})
	if err != nil {
		log.Fatal(err) // an invalid policy: the error names the field to fix
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		if d, ok := ratelimit.DecisionFrom(r.Context()); ok {
			fmt.Fprintf(w, "%d requests left\n", d.Remaining)
		}
	})
	// A stricter limit on one route, over the same store, keyed by client IP and route:
	mux.Handle("POST /login", ratelimit.Middleware(limiter,
		ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute, Algorithm: algorithms.SlidingLog{}}),
		ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute())),
		ratelimit.FailClosed(http.StatusServiceUnavailable),
	)(loginHandler))

	// Every route, keyed by the client's IP address. Register the routes first:
	// ListenAndServe blocks.
	return ratelimit.Middleware(limiter)(mux)
}

// README's "Use it" block is readmeUseIt's body: every line of it, in order, but the imports
// and ListenAndServe.
func TestReadmeUseItAsWritten(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "## Use it\n\n```go\n")
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("README has no Go block under \"## Use it\"")
	}
	_, block, ok = strings.Cut(block, ")\n\n") // after the imports
	if !ok {
		t.Fatal("README's \"Use it\" block has no imports")
	}
	source, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(source), "func readmeUseIt(loginHandler http.Handler) http.Handler {\n")
	body, _, _ = strings.Cut(body, "\n}\n")
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		if !strings.Contains(line, "ListenAndServe(") {
			want = append(want, "\t"+line)
		}
	}
	got := strings.Split(body, "\n")
	got = got[:len(got)-1] // the return that stands for ListenAndServe
	for i := range want {
		if want[i] == "\t" { // a blank line
			want[i] = ""
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("README's \"Use it\" code and readmeUseIt differ:\nREADME:\n%s\nreadmeUseIt:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// What README's "Use it" code does: /items/{id} tells the client what it has left of 10 a
// second; the login route admits 5 a minute per client and route; clients are apart. (The
// store is README's, on the system clock: nothing here depends on less than a minute passing
// between two requests.)
func TestReadmeUseIt(t *testing.T) {
	logins := 0
	h := readmeUseIt(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { logins++ }))
	send := func(method, path, ip string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, nil)
		r.RemoteAddr = ip + ":1234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := send("GET", "/items/7", "192.0.2.1"); w.Code != http.StatusOK || w.Body.String() != "9 requests left\n" {
		t.Fatalf("GET /items/7: %d %q; want 200 \"9 requests left\"", w.Code, w.Body.String())
	}
	for i := range 5 {
		if w := send("POST", "/login", "192.0.2.2"); w.Code != http.StatusOK {
			t.Fatalf("login %d: %d; want 200", i+1, w.Code)
		}
	}
	if w := send("POST", "/login", "192.0.2.2"); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("the 6th login in a minute: %d, Retry-After %q; want 429 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	if logins != 5 {
		t.Errorf("the login handler ran %d times; want 5", logins)
	}
	if w := send("POST", "/login", "192.0.2.3"); w.Code != http.StatusOK {
		t.Errorf("another client's login: %d; want 200", w.Code)
	}
}
