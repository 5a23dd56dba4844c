// Command grpc is a rate-limited gRPC server: it serves the standard health service
// (grpc.health.v1.Health) and server reflection. Every call, unary or streaming, is limited per
// client IP address by two policies at once: 5 calls per 10 seconds ("burst", exact) and 100
// per hour ("hourly").
//
//	go run ./grpc                                         # limits in memory
//	REDIS_URL=redis://localhost:6379/0 go run ./grpc      # limits shared by every instance
//
// Then make a few calls (with grpcurl, say); the sixth within 10 seconds is refused with
// RESOURCE_EXHAUSTED, a google.rpc.RetryInfo detail and the grpc-retry-pushback-ms trailer,
// and every call carries x-ratelimit-* header metadata:
//
//	for i in 1 2 3 4 5 6; do grpcurl -plaintext -v localhost:8080 grpc.health.v1.Health/Check 2>&1 | grep -iE 'ratelimit|retry|code:'; done
//
// Environment:
//
//	ADDR              address to listen on (default :8080)
//	REDIS_URL         redis://[user:password@]host:port/db; the memory store when unset
//	RATELIMIT_PREFIX  prefix of the keys in Redis (default "rl:")
//
// The client is the connection's peer: no x-forwarded-for metadata is trusted. Behind a
// proxy that sets it (Envoy, say), add ratelimit.TrustProxies("X-Forwarded-For", "<the
// proxies' CIDR>") to the options. If Redis fails, calls pass (fail-open) and the error is
// logged. Each call's decision is logged by an interceptor after the limiter's, which reads it
// with grpclimit.Decision, as a handler would.
package main

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/grpc"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/examples/internal/exampleserver"
)

func main() { exampleserver.Main("grpc", run) }

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
	g, err := ratelimit.NewGuard(limiter, ratelimit.WithKey(ratelimit.KeyByIP()),
		ratelimit.WithResponse(ratelimit.Response{IETFDraft: 11}))
	if err != nil {
		return err
	}
	unary, stream := grpclimit.FromGuard(g)
	quota := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		if d, ok := grpclimit.Decision(ctx); ok {
			log.Info("call", "method", info.FullMethod, "remaining", d.Remaining, "policy", d.Policy.Name)
		}
		return next(ctx, req)
	}

	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(unary, quota),
		grpc.ChainStreamInterceptor(stream),
	)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	reflection.Register(srv)

	return exampleserver.Serve(ctx, log, srv.Serve, func(ctx context.Context) error {
		stopped := make(chan struct{})
		go func() {
			srv.GracefulStop() // the calls in flight finish; streams are told to end
			close(stopped)
		}()
		select {
		case <-stopped:
			return nil
		case <-ctx.Done():
			srv.Stop()
			return ctx.Err()
		}
	})
}
