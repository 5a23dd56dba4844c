package ratelimit_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// fallbackCounter counts the key fallbacks an Observer is told, by reason.
type fallbackCounter struct {
	answers
	mu sync.Mutex
	n  map[string]int
}

func (f *fallbackCounter) KeyFellBack(reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	f.n[reason]++
}

// observer returns the hooks that count into f.
func (f *fallbackCounter) observer() *ratelimit.Observer {
	o := f.answers.observer()
	o.KeyFellBack = f.KeyFellBack
	return o
}

// KeyByRoute in middleware around a ServeMux: wrapping the mux itself, requests are keyed by
// their route (the middleware asks the mux); wrapping a handler that hides the mux, no route is
// known, and the fallback to the client IP is logged once and counted every time, with its
// reason (issue: it fell back silently).
func TestKeyByRouteAroundMux(t *testing.T) {
	for _, tc := range []struct {
		name      string
		routes    bool
		want      string
		fallbacks int
	}{
		{"around a handler that hides the mux", false, "[200 200 200 200]", 4},
		{"around the mux", true, "[200 200 429 429]", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged syncBuffer
			obs := &fallbackCounter{}
			store := ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()), ratelimit.WithObserver(obs.observer()),
				ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
			l := mustNew(t, store, ratelimit.Policy{Limit: 2, Window: time.Minute})
			mux := http.NewServeMux()
			mux.HandleFunc("GET /items/{id}", func(http.ResponseWriter, *http.Request) {})
			opts := []ratelimit.Option{ratelimit.WithKey(ratelimit.KeyByRoute())}
			var next http.Handler = mux
			if !tc.routes {
				next = http.HandlerFunc(mux.ServeHTTP)
			}
			h := ratelimit.Middleware(l, opts...)(next)
			var got []int
			for i := range 4 {
				r := httptest.NewRequest("GET", fmt.Sprintf("/items/%d", i), nil)
				r.RemoteAddr = fmt.Sprintf("192.0.2.%d:1", i+1)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				got = append(got, w.Code)
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("four clients on one route: %v, want %s", got, tc.want)
			}
			if n := obs.n["no_route"]; n != tc.fallbacks || len(obs.n) > 1 {
				t.Errorf("fallbacks counted: %v; want %d for no_route", obs.n, tc.fallbacks)
			}
			if n := strings.Count(logged.String(), "KeyByRoute found no route"); n != min(tc.fallbacks, 1) {
				t.Errorf("logged the fallback %d times, want %d:\n%s", n, min(tc.fallbacks, 1), logged.String())
			}
		})
	}
}

// A request without the header a guard keys by is limited by its IP, as documented: counted
// with reason no_header each time, logged once per guard at info level.
func TestKeyFallbackNoHeader(t *testing.T) {
	var logged syncBuffer
	obs := &fallbackCounter{}
	store := ratelimit.NewMemoryStore(ratelimit.WithObserver(obs.observer()), ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	l := mustNew(t, store, ratelimit.Policy{Limit: 100, Window: time.Minute})
	h := ratelimit.Middleware(l, ratelimit.WithKey(ratelimit.KeyOr(ratelimit.KeyByHeader("X-API-Key"))))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for range 3 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}
	if obs.n["no_header"] != 3 {
		t.Errorf("fallbacks counted: %v; want 3 for no_header", obs.n)
	}
	if n := strings.Count(logged.String(), "level=INFO"); n != 1 || !strings.Contains(logged.String(), "reason=no_header") {
		t.Errorf("logged:\n%s\nwant one info line with reason=no_header", logged.String())
	}
}

// A ServeMux answers a path that matches only with a slash added ("/users/a" under
// "/users/{id}/") with a redirect, and names as its pattern the path it redirects to, which the
// client wrote: for CONNECT requests, and for every method before Go 1.25 (golang/go#73688).
// Keyed by that, each path the client made up had a quota of its own, and was stored: the
// route of such a request is unknown, so it is limited by its client IP.
func TestKeyByRouteRedirectMintsNoQuota(t *testing.T) {
	for _, method := range []string{"CONNECT", "GET"} {
		t.Run(method, func(t *testing.T) {
			l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())), ratelimit.Policy{Limit: 1, Window: time.Hour})
			mux := http.NewServeMux()
			mux.HandleFunc("/users/{id}/", func(http.ResponseWriter, *http.Request) {})
			h := ratelimit.Middleware(l, ratelimit.WithKey(ratelimit.KeyByRoute()),
				ratelimit.WithErrorHandler(func(ratelimit.Request, error) {}))(mux)
			var got []int
			for i := range 4 {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(method, fmt.Sprintf("/users/%d", i), nil))
				got = append(got, w.Code)
			}
			if fmt.Sprint(got) != "[307 429 429 429]" {
				t.Errorf("one client, four made-up paths: %v; want [307 429 429 429] (one quota)", got)
			}
			// A path with an escape: ServeMux names the decoded path and a slash for CONNECT
			// (and before Go 1.25 for every method), which is not the path as escaped.
			got = got[:0]
			for i := range 3 {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(method, fmt.Sprintf("/users/%d%%41", i), nil))
				got = append(got, w.Code)
			}
			if fmt.Sprint(got) != "[429 429 429]" {
				t.Errorf("the same client, made-up paths with an escape: %v; want [429 429 429] (the same quota)", got)
			}
		})
	}
}
