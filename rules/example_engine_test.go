package rules_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// stoppedClock stands still, so that the example's output does not depend on the time.
type stoppedClock struct{}

func (stoppedClock) Now() time.Time                             { return time.Unix(1_800_000_000, 0) }
func (stoppedClock) Sleep(context.Context, time.Duration) error { return nil }

// Apply a rules document to a net/http handler, then change a limit while it serves: the
// client's count carries over to the new version.
func ExampleEngine() {
	v1, err := rules.Parse("limits.yaml", []byte(`
version: "1"
rules:
  - {name: api, key: api_key, policies: [{name: per-minute, algorithm: fixed_window, limit: 2, window: 1m}]}
`))
	if err != nil {
		panic(err)
	}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(stoppedClock{})) // leave WithClock out in an application
	e, err := rules.NewEngine(store, v1, rules.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	handler := ratelimit.FromGuard(e.Guard())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	request := func() {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("X-API-Key", "abc")
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		fmt.Printf("version %s: %d, %s of %s left\n", e.Version(), w.Code,
			w.Header().Get("X-RateLimit-Remaining"), w.Header().Get("X-RateLimit-Limit"))
	}
	request()
	request()

	v2, err := rules.Parse("limits.yaml", []byte(`
version: "2"
rules:
  - {name: api, key: api_key, policies: [{name: per-minute, algorithm: fixed_window, limit: 3, window: 1m}]}
`))
	if err != nil {
		panic(err)
	}
	if err := e.Apply(v2); err != nil { // or e.WatchFile, e.WatchRedis
		panic(err)
	}
	request()
	request()
	// Output:
	// version 1: 200, 1 of 2 left
	// version 1: 200, 0 of 2 left
	// version 2: 200, 0 of 3 left
	// version 2: 429, 0 of 3 left
}
