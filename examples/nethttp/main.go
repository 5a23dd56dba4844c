// Command nethttp is a rate-limited net/http server. Every path is limited per client IP
// address by two policies at once: 5 requests per 10 seconds ("burst", exact) and 100 per hour
// ("hourly").
//
//	go run ./nethttp                                         # limits in memory
//	REDIS_URL=redis://localhost:6379/0 go run ./nethttp      # limits shared by every instance
//
// Then send a few requests; the sixth within 10 seconds is refused:
//
//	for i in 1 2 3 4 5 6; do curl -s -o /dev/null -D - localhost:8080/ | grep -iE '^(HTTP|x-ratelimit|retry|ratelimit)'; done
//
// Environment:
//
//	ADDR              address to listen on (default :8080)
//	REDIS_URL         redis://[user:password@]host:port/db; the memory store when unset
//	RATELIMIT_PREFIX  prefix of the keys in Redis (default "rl:")
//
// The client is the connection's address: no proxy header is trusted. Behind a reverse proxy,
// add ratelimit.TrustProxies("X-Forwarded-For", "<the proxies' CIDR>") to the options. If
// Redis fails, requests pass (fail-open) and the error is logged. Every page tells how many
// requests its client has left: the handler reads the limiter's decision.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/examples/internal/exampleserver"
)

func main() { exampleserver.Main("nethttp", run) }

// run serves until ctx ends.
func run(ctx context.Context, log *slog.Logger) error {
	store, closeStore, err := exampleserver.Store(ctx, log)
	if err != nil {
		return err
	}
	defer closeStore()

	limiter, err := ratelimit.New(store,
		ratelimit.Policy{Name: "burst", Limit: 5, Window: 10 * time.Second, Algorithm: algorithms.SlidingLog{}},
		ratelimit.Policy{Name: "hourly", Limit: 100, Window: time.Hour, Algorithm: algorithms.SlidingCounter{}},
	)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", r.URL.Path)
		if d, ok := ratelimit.DecisionFrom(r.Context()); ok {
			fmt.Fprintf(w, "%d requests left under %q\n", d.Remaining, d.Policy.Name)
		}
	})
	handler := ratelimit.Middleware(limiter,
		ratelimit.WithKey(ratelimit.KeyByIP()),
		ratelimit.WithResponse(ratelimit.Response{IETFDraft: 11}),
	)(mux)

	return exampleserver.ServeHTTP(ctx, log, handler)
}
