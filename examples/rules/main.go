// Command rules is a net/http server whose limits come from a rules file, reloaded while it
// runs, with a plan (tier) for each API key.
//
//	go run ./rules                                 # from the examples directory
//	curl -s -D - -H 'X-API-Key: key-free-1' localhost:8080/items/1
//
// Edit rules/limits.yaml while it runs: the change is applied within a second and logged with
// its version; a file with a mistake is logged with the line of each error, and the last good
// rules stay in use.
//
// Environment:
//
//	ADDR              address to listen on (default :8080)
//	RULES             the rules file (default rules/limits.yaml)
//	REDIS_URL         redis://host:port/db; the memory store when unset
//	RATELIMIT_PREFIX  prefix of the keys in Redis (default "rl:")
//
// The API keys and their plans stand for the application's customer database: key-free-1 and
// key-free-2 are on the free plan, key-pro-1 on the pro plan. A request without a known key is
// limited by its IP address, under the rule without a tier.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/examples/internal/exampleserver"
	"github.com/a7d3e0dd/ratelimit/rules"
)

func main() { exampleserver.Main("rules", run) }

// plans is the example's customer database: the plan of each API key.
var plans = map[string]string{"key-free-1": "free", "key-free-2": "free", "key-pro-1": "pro"}

// planOf returns the plan of the request's API key, "" when it has none or an unknown one.
func planOf(r ratelimit.Request) string { return plans[r.Header("X-API-Key")] }

// run serves until ctx ends.
func run(ctx context.Context, log *slog.Logger) error {
	store, closeStore, err := exampleserver.Store(ctx, log)
	if err != nil {
		return err
	}
	defer closeStore()

	path := os.Getenv("RULES")
	if path == "" {
		path = "rules/limits.yaml"
	}
	engine, err := rules.Open(store, path,
		rules.WithTier(planOf),
		rules.WithLogger(log),
		rules.WithResponse(ratelimit.Response{IETFDraft: 11}),
	)
	if err != nil {
		return err
	}
	go engine.WatchFile(ctx, path)

	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		plan := plans[r.Header.Get("X-API-Key")]
		if plan == "" {
			plan = "anonymous"
		}
		fmt.Fprintf(w, "hello from %s, on the %s plan\n", r.URL.Path, plan)
		if d, ok := ratelimit.DecisionFrom(r.Context()); ok {
			fmt.Fprintf(w, "%d requests left under %q\n", d.Remaining, d.Policy.Name)
		}
	})
	return exampleserver.ServeHTTP(ctx, log, ratelimit.FromGuard(engine.Guard())(mux))
}
