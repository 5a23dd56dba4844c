// Command gin is a rate-limited Gin server. Every route is limited per client IP address by
// two policies at once: 5 requests per 10 seconds ("burst", exact) and 100 per hour
// ("hourly"); POST /login has a stricter limit of its own on top: 3 per minute ("login").
//
//	go run ./gin                                         # limits in memory
//	REDIS_URL=redis://localhost:6379/0 go run ./gin      # limits shared by every instance
//
// Then send a few requests; the sixth within 10 seconds is refused, and so is the fourth login
// within a minute:
//
//	for i in 1 2 3 4 5 6; do curl -s -o /dev/null -D - localhost:8080/ | grep -iE '^(HTTP|x-ratelimit|retry|ratelimit)'; done
//	for i in 1 2 3 4; do curl -s -o /dev/null -w '%{http_code}\n' -X POST localhost:8080/login; done
//
// Environment:
//
//	ADDR              address to listen on (default :8080)
//	REDIS_URL         redis://[user:password@]host:port/db; the memory store when unset
//	RATELIMIT_PREFIX  prefix of the keys in Redis (default "rl:")
//
// The client is the connection's address: no proxy header is trusted, and Gin's own ClientIP
// settings play no part. Behind a reverse proxy, add ratelimit.TrustProxies("X-Forwarded-For",
// "<the proxies' CIDR>") to the options. If Redis fails, requests pass (fail-open) and the
// error is logged. Every page tells how many requests its client has left: the handler reads
// the limiter's decision.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/gin"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/examples/internal/exampleserver"
)

func main() { exampleserver.Main("gin", run) }

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
	headers := ratelimit.WithResponse(ratelimit.Response{IETFDraft: 11})

	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(gin.Recovery())
	r.Use(ginlimit.New(limiter, ratelimit.WithKey(ratelimit.KeyByIP()), headers))
	r.POST("/login", ginlimit.New(limiter,
		ratelimit.WithPolicies(ratelimit.Policy{Name: "login", Limit: 3, Window: time.Minute, Algorithm: algorithms.SlidingLog{}}),
		ratelimit.WithKey(ratelimit.KeyByIP()), headers,
	), func(c *gin.Context) {
		c.String(http.StatusOK, "welcome\n")
	})
	r.NoRoute(func(c *gin.Context) {
		msg := fmt.Sprintf("hello from %s\n", c.Request.URL.Path)
		if d, ok := ginlimit.Decision(c); ok {
			msg += fmt.Sprintf("%d requests left under %q\n", d.Remaining, d.Policy.Name)
		}
		c.String(http.StatusOK, "%s", msg)
	})

	return exampleserver.ServeHTTP(ctx, log, r)
}
