package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// printResponse prints a label, the status of a response and its X-RateLimit-Remaining.
func printResponse(label string, w *httptest.ResponseRecorder) {
	fmt.Printf("%-12s %d", label, w.Code)
	if v := w.Header().Get("X-RateLimit-Remaining"); v != "" {
		fmt.Printf(" remaining=%s", v)
	}
	fmt.Println()
}

// Limit API clients by their key, 2 requests a minute each. A request without the header is
// limited by its client IP instead; a repeated header is malformed (400).
func ExampleKeyByHeader() {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newExampleClock()))
	limiter, err := ratelimit.New(store, ratelimit.Policy{Limit: 2, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	handler := ratelimit.Middleware(limiter, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")))(hello)

	send := func(label string, apiKeys ...string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		for _, k := range apiKeys {
			r.Header.Add("X-API-Key", k)
		}
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		printResponse(label, w)
	}
	send("key-a", "k-a")
	send("key-a", "k-a")
	send("key-a", "k-a")
	send("key-b", "k-b")
	send("no key") // limited by its IP: a quota of its own
	send("repeated", "k-a", "k-b")
	// Output:
	// key-a        200 remaining=1
	// key-a        200 remaining=0
	// key-a        429 remaining=0
	// key-b        200 remaining=1
	// no key       200 remaining=1
	// repeated     400
}

// exampleUserKey is the context key under which the example's authentication middleware
// stores the user's id.
type exampleUserKey struct{}

// Limit each signed-in user, whichever address they come from: the authentication middleware
// runs first and stores the user's id in the request's context, and KeyByUser reads it. With
// Gin or Echo it would be c.Set("user", id) and KeyByUser("user"); with Fiber, c.Locals.
func ExampleKeyByUser() {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newExampleClock()))
	limiter, err := ratelimit.New(store, ratelimit.Policy{Limit: 2, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	// A stand-in for real authentication: "Authorization: Bearer <user>".
	auth := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				r = r.WithContext(context.WithValue(r.Context(), exampleUserKey{}, user))
			}
			next.ServeHTTP(w, r)
		})
	}
	limit := ratelimit.Middleware(limiter,
		ratelimit.WithKey(ratelimit.KeyByUser(exampleUserKey{})),
		ratelimit.WithAccess(ratelimit.Access{MissingKey: http.StatusUnauthorized}), // no user: 401, not limited by IP
	)
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	handler := auth(limit(hello))

	for _, user := range []string{"alice", "alice", "alice", "bob", ""} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if user != "" {
			r.Header.Set("Authorization", "Bearer "+user)
		} else {
			user = "anonymous"
		}
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		printResponse(user, w)
	}
	// Output:
	// alice        200 remaining=1
	// alice        200 remaining=0
	// alice        429 remaining=0
	// bob          200 remaining=1
	// anonymous    401
}

// Behind reverse proxies, name them once: the guard then finds the client in the header they
// write, for KeyByIP and for the IP that limits a request whose key function finds no key
// alike. A client that sends the header itself, not through a proxy, is limited by its own
// address.
func ExampleTrustProxies() {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newExampleClock()))
	limiter, err := ratelimit.New(store, ratelimit.Policy{Limit: 1, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	handler := ratelimit.Middleware(limiter,
		ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), // no API key: the client IP
		ratelimit.TrustProxies("X-Forwarded-For", "10.0.0.0/8"),
	)(hello)

	send := func(label, peer, forwardedFor string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = peer
		r.Header.Set("X-Forwarded-For", forwardedFor)
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		printResponse(label, w)
	}
	send("client 1", "10.0.0.7:4711", "203.0.113.9")         // through the load balancer
	send("client 1", "10.0.0.7:4711", "203.0.113.9")         // the same client: its quota is spent
	send("client 2", "10.0.0.7:4711", "203.0.113.10")        // another client behind the same proxy
	send("spoofer", "198.51.100.1:5555", "203.0.113.11")     // not a proxy: the header is ignored
	send("spoofer", "198.51.100.1:5555", "203.0.113.12")     // a new header is no new quota
	send("malformed", "10.0.0.7:4711", "203.0.113.9, bogus") // a proxy's header must be readable
	// Output:
	// client 1     200 remaining=0
	// client 1     429 remaining=0
	// client 2     200 remaining=0
	// spoofer      200 remaining=0
	// spoofer      429 remaining=0
	// malformed    400
}
