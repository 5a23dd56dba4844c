package ratelimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// show prints the status of a response and the rate-limit headers it carries.
func show(w *httptest.ResponseRecorder) {
	fmt.Print(w.Code)
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "Retry-After"} {
		if v := w.Header().Get(h); v != "" {
			fmt.Printf(" %s=%s", strings.TrimPrefix(h, "X-RateLimit-"), v)
		}
	}
	fmt.Println()
}

// Limit every route of a mux to 2 requests per second and 100 per hour per client IP: one
// line around the mux. (The examples' stores run on a clock that stands still, so that their
// output does not depend on how busy the machine is; leave WithClock out in an application.)
func ExampleMiddleware() {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newExampleClock()))
	limiter, err := ratelimit.New(store, ratelimit.Policy{Limit: 2, Window: time.Second}, ratelimit.Policy{Limit: 100, Window: time.Hour})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	handler := ratelimit.Middleware(limiter)(mux) // then http.ListenAndServe(":8080", handler)

	for range 3 {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/hello", nil))
		show(w)
	}
	// Output:
	// 200 Limit=2 Remaining=1
	// 200 Limit=2 Remaining=0
	// 429 Limit=2 Remaining=0 Retry-After=1
}

// A stricter limit on one route, keyed by client IP and route, over the same store: one
// line around the route's handler.
func ExampleMiddleware_perRoute() {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newExampleClock()))
	limiter, err := ratelimit.New(store, ratelimit.Policy{Limit: 100, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	login := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "welcome") })
	mux := http.NewServeMux()
	mux.Handle("POST /login", ratelimit.Middleware(limiter,
		ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 2, Window: time.Minute}),
		ratelimit.WithKey(ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute())),
	)(login))
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "home") })

	for _, target := range []string{"/login", "/login", "/login"} {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, target, nil))
		show(w)
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	show(w) // other routes are not limited by this middleware
	// Output:
	// 200 Limit=2 Remaining=1
	// 200 Limit=2 Remaining=0
	// 429 Limit=2 Remaining=0 Retry-After=30
	// 200
}

// A handler behind the middleware reads the decision about its request.
func ExampleDecisionFrom() {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newExampleClock()))
	limiter, err := ratelimit.New(store, ratelimit.Policy{Name: "api", Limit: 100, Window: time.Hour})
	if err != nil {
		panic(err)
	}
	handler := ratelimit.Middleware(limiter)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d, ok := ratelimit.DecisionFrom(r.Context()); ok {
			fmt.Fprintf(w, "%d of %d left under %q", d.Remaining, d.Limit, d.Policy.Name)
		}
	}))

	w := httptest.NewRecorder()
	handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	fmt.Println(w.Body)
	// Output:
	// 99 of 100 left under "api"
}

// Limit API clients by key, anonymous ones by IP.
func ExampleKeyOr() {
	key := ratelimit.KeyOr(ratelimit.KeyByHeader("X-API-Key"), ratelimit.KeyByIP())

	r := httptest.NewRequest(http.MethodGet, "/", nil)
	fmt.Println(key(ratelimit.HTTPRequest(r)))
	r.Header.Set("X-API-Key", "k-123")
	fmt.Println(key(ratelimit.HTTPRequest(r)))
	// Output:
	// ip:192.0.2.1 <nil>
	// hdr:x-api-key:k-123 <nil>
}

// Count only failed logins: a client gets 3 wrong passwords a minute, and as many right ones
// as it likes until then.
func ExampleCountIf() {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newExampleClock()))
	limiter, err := ratelimit.New(store, ratelimit.Policy{Limit: 3, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	login := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("password") != "secret" {
			http.Error(w, "wrong password", http.StatusUnauthorized)
		}
	})
	handler := ratelimit.Middleware(limiter,
		ratelimit.CountIf(func(status int) bool { return status == http.StatusUnauthorized }),
	)(login)

	for _, password := range []string{"secret", "guess1", "secret", "guess2", "guess3", "secret"} {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/login?password="+password, nil))
		fmt.Println(password, w.Code)
	}
	// Output:
	// secret 200
	// guess1 401
	// secret 200
	// guess2 401
	// guess3 401
	// secret 429
}

// A framework adapter is a few lines around a Guard: check, write the headers, answer or call
// the next handler, and report its status.
func ExampleGuard() {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newExampleClock()))
	limiter, err := ratelimit.New(store, ratelimit.Policy{Limit: 1, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	guard, err := ratelimit.NewGuard(limiter)
	if err != nil {
		panic(err)
	}
	serve := func(r *http.Request, next func() int) {
		o := guard.Check(ratelimit.HTTPRequest(r)) // or the framework's own Request
		o.Headers(func(name, value string) { fmt.Printf("  %s: %s\n", name, value) })
		if !o.Proceed {
			fmt.Printf("  answer %d %s", o.Status, o.Body)
			return
		}
		guard.Done(&o, next())
	}
	for range 2 {
		fmt.Println("request")
		serve(httptest.NewRequest(http.MethodGet, "/", nil), func() int { fmt.Println("  handled"); return 200 })
	}
	// Output:
	// request
	//   X-RateLimit-Limit: 1
	//   X-RateLimit-Remaining: 0
	//   X-RateLimit-Reset: 1767225660
	//   handled
	// request
	//   X-RateLimit-Limit: 1
	//   X-RateLimit-Remaining: 0
	//   X-RateLimit-Reset: 1767225660
	//   Retry-After: 60
	//   Content-Type: text/plain; charset=utf-8
	//   X-Content-Type-Options: nosniff
	//   answer 429 Too Many Requests: Rate limit exceeded. Retry in 60 seconds.
}
