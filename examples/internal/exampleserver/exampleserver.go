// Package exampleserver is the plumbing every example server shares, so that each example's
// main.go is only about its limiter and its framework: the store chosen from $REDIS_URL, the
// address from $ADDR, the logger, signal handling, and serving with a graceful shutdown.
package exampleserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
)

// Main runs the command name: it calls run with a text logger on stderr and a context that
// ends at SIGINT or SIGTERM, and exits with status 1 if run fails.
func Main(name string, run func(ctx context.Context, log *slog.Logger) error) {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, log)
	stop()
	if err != nil {
		log.Error(name + ": " + err.Error())
		os.Exit(1)
	}
}

// Store returns the Redis store when $REDIS_URL is set, with the key prefix $RATELIMIT_PREFIX
// if set, else the memory store; and a function that releases it. An unreachable Redis is
// logged, not an error: requests pass until it answers. Everything the library logs for the
// store and the guards over it goes to log: a store failure at most once a second, with how
// many were not logged since, rather than a line per request.
func Store(ctx context.Context, log *slog.Logger) (ratelimit.Store, func(), error) {
	return StoreAt(ctx, log, os.Getenv("REDIS_URL"), "set REDIS_URL")
}

// StoreAt is Store with the Redis URL given (a command's flag), "" for the memory store; the
// log of the memory store says to share the limits, as in "set REDIS_URL".
func StoreAt(ctx context.Context, log *slog.Logger, url, share string) (ratelimit.Store, func(), error) {
	if url == "" {
		log.Info("using the memory store: limits are per instance (" + share + " to share them)")
		return ratelimit.NewMemoryStore(ratelimit.WithLogger(log)), func() {}, nil
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	// Let a slow Redis give up at the limiter's deadline (100 ms) rather than its ReadTimeout.
	opts.ContextTimeoutEnabled = true
	client := redis.NewClient(opts)
	storeOpts := []ratelimit.RedisOption{ratelimit.WithLogger(log)}
	if prefix := os.Getenv("RATELIMIT_PREFIX"); prefix != "" {
		storeOpts = append(storeOpts, ratelimit.WithPrefix(prefix))
	}
	ping, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := client.Ping(ping).Err(); err != nil {
		log.Warn("Redis does not answer yet; requests pass until it does", "addr", opts.Addr, "error", err)
	}
	log.Info("using the Redis store: limits are shared by every instance", "addr", opts.Addr, "db", opts.DB)
	return ratelimit.NewRedisStore(client, storeOpts...), func() { _ = client.Close() }, nil
}

// Addr is the address to listen on: $ADDR, or ":8080" when unset.
func Addr() string {
	if addr := os.Getenv("ADDR"); addr != "" {
		return addr
	}
	return ":8080"
}

// Serve listens on Addr(), logs "serving" with the URL, and calls serve with the listener until
// ctx ends; then it calls shutdown, giving it 5 seconds to finish the requests in flight.
func Serve(ctx context.Context, log *slog.Logger, serve func(net.Listener) error, shutdown func(context.Context) error) error {
	return serveAt(ctx, log, Addr(), serve, shutdown)
}

// serveAt is Serve on addr.
func serveAt(ctx context.Context, log *slog.Logger, addr string, serve func(net.Listener) error, shutdown func(context.Context) error) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		timeout, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(timeout)
	}()
	log.Info("serving", "url", "http://"+ln.Addr().String())
	return serve(ln)
}

// ServeHTTP serves handler with net/http as Serve does.
func ServeHTTP(ctx context.Context, log *slog.Logger, handler http.Handler) error {
	return ServeHTTPAt(ctx, log, Addr(), handler)
}

// ServeHTTPAt is ServeHTTP on addr (a command's flag).
func ServeHTTPAt(ctx context.Context, log *slog.Logger, addr string, handler http.Handler) error {
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	err := serveAt(ctx, log, addr, srv.Serve, srv.Shutdown)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
