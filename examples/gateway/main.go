// Command gateway is an API gateway: a reverse proxy (net/http/httputil) limited by a rules
// file, reloaded while it runs, in front of two services it starts itself on loopback ports,
// orders and search.
//
//	go run ./gateway                                        # from the examples directory
//	curl -s -D - -H 'X-API-Key: key-globex-1' localhost:8080/orders/42
//
// The limits are in gateway/gateway.yaml: each tenant has one quota across both services and
// all its API keys, searching has a limit per second of its own on top, and a request
// without an API key is limited by its client IP. The tenant is the one of the request's API
// key (-key-header): the gateway writes it into X-Tenant-ID and X-Tenant-Plan, having removed
// what the client sent there, and the rules key by it. A key no tenant holds is answered 401,
// and charged to the client IP's quota. Every response has X-RateLimit-Limit, -Remaining and
// -Reset; a refusal is 429 with Retry-After. A response of 500 or more, the service's own
// or the proxy's 502 when the service is down, is not charged (ratelimit.CountIf). A stream
// (GET /search/stream, server-sent events) reaches the client event by event.
//
// Flags:
//
//	-addr ADDR              address to listen on (default $ADDR, else :8080)
//	-rules FILE             the rules file (default gateway/gateway.yaml)
//	-redis URL              redis://host:port/db: limits shared by every gateway instance;
//	                        the memory store when unset. $RATELIMIT_PREFIX sets the keys' prefix
//	-key-header NAME        the header that carries the API key (default X-API-Key)
//	-trust-proxies CIDRS    networks of the load balancers in front, comma-separated, whose
//	                        X-Forwarded-For names the client; none by default
//	-stream-interval D      the search service's pause between two events (default 1s)
//
// The API keys stand for the customer database: key-acme-1 and key-acme-2 are tenant acme, on
// the pro plan; key-globex-1 and key-globex-2 are tenant globex, on the free plan.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit/examples/internal/exampleserver"
)

func main() { exampleserver.Main("gateway", run) }

// run serves until ctx ends.
func run(ctx context.Context, log *slog.Logger) error {
	addr := flag.String("addr", exampleserver.Addr(), "address to listen on")
	rulesPath := flag.String("rules", "gateway/gateway.yaml", "the rules file")
	redisURL := flag.String("redis", "", "redis://host:port/db to share the limits; the memory store when empty")
	keyHeader := flag.String("key-header", "X-API-Key", "the header that carries the API key")
	trust := flag.String("trust-proxies", "", "networks of the proxies in front, comma-separated, whose X-Forwarded-For is read")
	interval := flag.Duration("stream-interval", time.Second, "the search service's pause between two events of a stream")
	flag.Parse()
	if *interval < 0 {
		return fmt.Errorf("-stream-interval %v: give a pause of 0 or more", *interval)
	}

	store, closeStore, err := exampleserver.StoreAt(ctx, log, *redisURL, "give -redis redis://host:port/db")
	if err != nil {
		return err
	}
	defer closeStore()

	var proxies []string
	if *trust != "" {
		for p := range strings.SplitSeq(*trust, ",") {
			proxies = append(proxies, strings.TrimSpace(p))
		}
	}
	g, err := newGateway(config{
		store:        store,
		rulesPath:    *rulesPath,
		keyHeader:    *keyHeader,
		trustProxies: proxies,
		pause:        every(*interval),
		log:          log,
	})
	if err != nil {
		return err
	}
	defer g.close()
	go g.engine.WatchFile(ctx, *rulesPath)

	return exampleserver.ServeHTTPAt(ctx, log, *addr, g.handler)
}
