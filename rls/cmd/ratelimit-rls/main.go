// Command ratelimit-rls serves Envoy's rate limit service (RLS v3,
// envoy.service.ratelimit.v3.RateLimitService) from envoyproxy/ratelimit's YAML configuration,
// over this library's Redis or memory store.
//
//	ratelimit-rls [flags]                           serve
//	ratelimit-rls check [-addr A] DOMAIN K=V[,K=V...]... ask a server, as Envoy would
//
// Every flag has an environment variable, which the flag overrides:
//
//	-config PATH         RLS_CONFIG     a YAML file, or a directory of them (default: RUNTIME_ROOT/
//	                                    RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY, as envoyproxy/
//	                                    ratelimit reads it, RUNTIME_APPDIRECTORY being "config" by default)
//	-reload DURATION     RLS_RELOAD     how often the files are read again (1s; 0: never)
//	-redis URL           REDIS_URL      redis://[user:password@]host:port[/db], rediss:// or host:port;
//	                                    none: an in-memory store (one instance only)
//	-prefix PREFIX       RLS_PREFIX     the prefix of the store's keys (rl:)
//	-grpc-addr ADDR      GRPC_ADDR      the RLS and the gRPC health service (:8081)
//	-http-addr ADDR      HTTP_ADDR      GET /healthcheck, GET /rlconfig and GET /metrics (:8080)
//	-timeout DURATION    RLS_TIMEOUT    the bound of the store's part of each call (10ms)
//	-fail-mode MODES     RLS_FAIL_MODE  error, allow or deny: a descriptor the store cannot decide (error);
//	                                    per domain too: allow,edge=deny,internal=error
//	-fallback SHARE      RLS_FALLBACK   decide locally on SHARE of each limit while Redis is down (0: no)
//	-shadow-mode         SHADOW_MODE    answer every call OK, counting as usual
//	-response-headers    LIMIT_RESPONSE_HEADERS_ENABLED  the closest descriptor's limit, remaining
//	                                    count and reset in headers for Envoy to add (their names:
//	                                    LIMIT_LIMIT_HEADER, LIMIT_REMAINING_HEADER, LIMIT_RESET_HEADER)
//	-shutdown-grace D    RLS_SHUTDOWN_GRACE  how long calls in flight may finish on SIGTERM (10s)
//	-near-limit-ratio R  NEAR_LIMIT_RATIO  the share of a limit above which hits count as near_limit (0.8)
//	-fleet-key KEY       RLS_FLEET_KEY  with -redis: report to the fleet of the rules at KEY, which
//	                                    `ratelimit status -key KEY` lists (rl:rules; none: no report)
//	-instance NAME       RLS_INSTANCE   the instance's name in the fleet (host name, pid, random suffix)
//	-heartbeat D         RLS_HEARTBEAT  how often it reports (10s); a report lives three heartbeats
//
// The server is unhealthy (gRPC health NOT_SERVING, /healthcheck 503) while Redis is unavailable
// and a fail mode in force is error, with no -fallback: its calls then fail. On SIGTERM or SIGINT
// the server turns unhealthy,
// lets the calls in flight finish within the grace, and exits 0. The exit code is 1 when it
// cannot start (a configuration refused: each problem with its file and line), 2 on a usage
// error. Without GOGC in its environment, it runs its garbage collector at GOGC=400
// (gcPercent).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/rls"
	"github.com/a7d3e0dd/ratelimit/rules"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// gcPercent is the garbage collector's target unless GOGC says otherwise: the server's live
// heap is a few megabytes and every call allocates, so that at Go's default of 100 it collects
// tens of times a second under load, each time scanning every goroutine's stack.
const gcPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, nil))
}

// embedding is what a program that runs the command in-process (its tests) sets.
type embedding struct {
	ready func(grpcAddr, httpAddr string) // told the addresses once the server listens
	clock ratelimit.Clock                 // the store's and the server's clock
}

// run runs the command with args and the environment getenv, until ctx ends.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, e *embedding) int {
	if e == nil {
		e = &embedding{}
	}
	if len(args) > 0 && args[0] == "check" {
		return check(ctx, args[1:], stdout, stderr)
	}
	s, err := parseSettings(args, getenv, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "ratelimit-rls:", err)
		}
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	s.clock = e.clock
	if err := serve(ctx, s, log, e.ready); err != nil {
		fmt.Fprintln(stderr, "ratelimit-rls:", err)
		return 1
	}
	return 0
}

// settings are what the flags and the environment say.
type settings struct {
	config, redisURL, prefix, grpcAddr, httpAddr string
	reload, timeout, grace                       time.Duration
	failModes                                    rls.FailModes
	fallback, nearRatio                          float64
	shadow, headers                              bool
	headerNames                                  [3]string
	keyCompat, cacheKeyPrefix                    string          // -key-compat, -cache-key-prefix
	ietf                                         int             // -ietf-headers
	fleetKey, instance                           string          // -fleet-key ("": none), -instance
	heartbeat                                    time.Duration   // -heartbeat
	clock                                        ratelimit.Clock // the store's and the server's; nil: the system's (tests set it)
}

func parseSettings(args []string, getenv func(string) string, stderr io.Writer) (*settings, error) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	config := getenv("RLS_CONFIG")
	if root := getenv("RUNTIME_ROOT"); config == "" && root != "" {
		config = filepath.Join(root, getenv("RUNTIME_SUBDIRECTORY"), env("RUNTIME_APPDIRECTORY", "config"))
	}
	fs := flag.NewFlagSet("ratelimit-rls", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s := &settings{}
	var reload, timeout, grace, failMode, fallback, shadow, headers, nearRatio string
	fs.StringVar(&s.config, "config", config, "a YAML file, or a directory of them")
	fs.StringVar(&reload, "reload", env("RLS_RELOAD", "1s"), "how often the configuration is read again (0: never)")
	fs.StringVar(&s.redisURL, "redis", getenv("REDIS_URL"), "the Redis URL or host:port (none: an in-memory store)")
	fs.StringVar(&s.prefix, "prefix", env("RLS_PREFIX", "rl:"), "the prefix of the store's keys")
	fs.StringVar(&s.grpcAddr, "grpc-addr", env("GRPC_ADDR", ":8081"), "the address of the RLS and gRPC health services")
	fs.StringVar(&s.httpAddr, "http-addr", env("HTTP_ADDR", ":8080"), "the address of /healthcheck, /rlconfig and /metrics")
	fs.StringVar(&timeout, "timeout", env("RLS_TIMEOUT", rls.DefaultTimeout.String()), "the bound of the store's part of each call")
	fs.StringVar(&failMode, "fail-mode", env("RLS_FAIL_MODE", "error"), "error, allow or deny: a descriptor the store cannot decide; then DOMAIN=MODE,... for domains of their own")
	fs.StringVar(&fallback, "fallback", env("RLS_FALLBACK", "0"), "decide locally on this share of each limit while Redis is down (0: no)")
	fs.StringVar(&shadow, "shadow-mode", env("SHADOW_MODE", "false"), "answer every call OK, counting as usual")
	fs.StringVar(&headers, "response-headers", env("LIMIT_RESPONSE_HEADERS_ENABLED", "false"), "add the closest descriptor's limit, remaining count and reset as headers")
	s.headerNames = [3]string{getenv("LIMIT_LIMIT_HEADER"), getenv("LIMIT_REMAINING_HEADER"), getenv("LIMIT_RESET_HEADER")}
	fs.StringVar(&grace, "shutdown-grace", env("RLS_SHUTDOWN_GRACE", "10s"), "how long calls in flight may finish on SIGTERM")
	fs.StringVar(&nearRatio, "near-limit-ratio", env("NEAR_LIMIT_RATIO", "0.8"), "the share of a limit above which hits count as near_limit")
	var ietf string
	fs.StringVar(&s.keyCompat, "key-compat", env("RLS_KEY_COMPAT", "none"), "reference: count fixed windows in envoyproxy/ratelimit's Redis keys, shared with it")
	fs.StringVar(&s.cacheKeyPrefix, "cache-key-prefix", getenv("CACHE_KEY_PREFIX"), "the prefix of the reference's keys (-key-compat reference)")
	fs.StringVar(&ietf, "ietf-headers", env("RLS_IETF_HEADERS", "0"), "add the IETF RateLimit-Policy and RateLimit fields of draft 11 or 10 (0: none)")
	var heartbeat string
	fs.StringVar(&s.fleetKey, "fleet-key", env("RLS_FLEET_KEY", rules.DefaultRedisKey), "with -redis: the rules key whose fleet the instance reports to (ratelimit status -key); none: no report")
	fs.StringVar(&s.instance, "instance", getenv("RLS_INSTANCE"), "the instance's name in the fleet, unique (default: host name, process id and a random suffix)")
	fs.StringVar(&heartbeat, "heartbeat", env("RLS_HEARTBEAT", rules.DefaultHeartbeat.String()), "how often the instance reports to the fleet")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := s.parseFleet(heartbeat); err != nil {
		return nil, err
	}
	if err := s.parseCompat(ietf); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (the flags come first; ratelimit-rls check ... asks a server)", fs.Arg(0))
	}
	if s.config == "" {
		return nil, errors.New("no configuration: give -config PATH, RLS_CONFIG or RUNTIME_ROOT")
	}
	var err error
	for _, d := range []struct {
		name string
		text string
		to   *time.Duration
		min  time.Duration
	}{{"-reload", reload, &s.reload, 0}, {"-timeout", timeout, &s.timeout, time.Microsecond}, {"-shutdown-grace", grace, &s.grace, 0}} {
		if *d.to, err = time.ParseDuration(d.text); err != nil || *d.to < d.min {
			return nil, fmt.Errorf("%s %q: a duration such as 10ms or 1s, at least %v", d.name, d.text, d.min)
		}
	}
	if s.failModes, err = rls.ParseFailModes(failMode); err != nil {
		return nil, fmt.Errorf("-fail-mode: %w", err)
	}
	if s.nearRatio, err = strconv.ParseFloat(nearRatio, 64); err != nil || !(s.nearRatio > 0 && s.nearRatio <= 1) {
		return nil, fmt.Errorf("-near-limit-ratio %q: a share in (0, 1]", nearRatio)
	}
	if s.fallback, err = strconv.ParseFloat(fallback, 64); err != nil || s.fallback < 0 || s.fallback > 1 {
		return nil, fmt.Errorf("-fallback %q: a share in [0, 1]", fallback)
	}
	if s.fallback > 0 && s.redisURL == "" {
		return nil, errors.New("-fallback needs -redis: the memory store has no outage to fall back from")
	}
	if s.shadow, err = strconv.ParseBool(shadow); err != nil {
		return nil, fmt.Errorf("-shadow-mode %q: true or false", shadow)
	}
	if s.headers, err = strconv.ParseBool(headers); err != nil {
		return nil, fmt.Errorf("-response-headers %q: true or false", headers)
	}
	return s, nil
}

// streamWorkers are the goroutines that serve the gRPC calls, kept between calls (beyond
// them, a call gets one of its own): a goroutine made for each call grows its stack to the
// depth of a store call every time, a good part of a call's CPU.
const streamWorkers = 128

// redisOptions reads a Redis URL, or a plain host:port as envoyproxy/ratelimit's REDIS_URL is.
func redisOptions(u string) (*redis.Options, error) {
	if !strings.Contains(u, "://") {
		u = "redis://" + u
	}
	o, err := redis.ParseURL(u)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w", err)
	}
	o.ContextTimeoutEnabled = true // every call ends at its deadline, the server's bound
	return o, nil
}

// healthProbeEvery is how often the server probes a store that is unavailable, so that it sees
// it back even when no call comes (a balancer took the unhealthy server out).
const healthProbeEvery = 100 * time.Millisecond

// serve runs the server until ctx ends.
func serve(ctx context.Context, s *settings, log *slog.Logger, ready func(grpcAddr, httpAddr string)) error {
	cfg, err := rls.LoadConfig(s.config)
	if err != nil {
		return fmt.Errorf("the configuration is refused:\n%w", err)
	}
	storeOpts := []ratelimit.StoreOption{ratelimit.WithPrefix(s.prefix), ratelimit.WithLogger(log)}
	metrics, err := rls.NewMetrics(rls.WithNearLimitRatio(s.nearRatio))
	if err != nil {
		return err
	}
	opts := []rls.Option{rls.WithFailModes(s.failModes), rls.WithTimeout(s.timeout), rls.WithLogger(log), rls.WithMetrics(metrics)}
	if s.clock != nil {
		storeOpts = append(storeOpts, ratelimit.WithClock(s.clock))
		opts = append(opts, rls.WithClock(s.clock))
	}
	var store ratelimit.Store
	var fleetClient redis.UniversalClient // the fleet's reports; nil: none
	if s.redisURL == "" {
		store = ratelimit.NewMemoryStore(storeOpts...)
		log.Info("ratelimit-rls: counting in memory (no -redis): the limits are this instance's alone")
	} else {
		o, err := redisOptions(s.redisURL)
		if err != nil {
			return err
		}
		client := redis.NewClient(o)
		defer client.Close()
		if s.fleetKey != "" {
			fleetClient = client
		}
		health := rls.NewStoreHealth()
		opts = append(opts, rls.WithStoreHealth(health))
		redisOpts := []ratelimit.RedisOption{ratelimit.WithCallTimeout(s.timeout), ratelimit.WithObserver(health.Observer(nil))}
		for _, o := range storeOpts {
			redisOpts = append(redisOpts, o)
		}
		if s.fallback > 0 {
			redisOpts = append(redisOpts, ratelimit.WithFallback(s.fallback))
			opts = append(opts, rls.WithLocalFallback())
		}
		if s.keyCompat == "reference" {
			opts = append(opts, rls.WithReferenceKeys(client, s.cacheKeyPrefix))
		}
		rs := ratelimit.NewRedisStore(client, redisOpts...)
		defer rs.Close()
		store = rs
	}
	if s.shadow {
		opts = append(opts, rls.WithGlobalShadowMode())
	}
	if s.headers {
		opts = append(opts, rls.WithResponseHeaders(s.headerNames[0], s.headerNames[1], s.headerNames[2]))
	}
	if s.ietf != 0 {
		opts = append(opts, rls.WithIETFHeaders(s.ietf))
	}
	srv, err := rls.NewServer(store, cfg, opts...)
	if err != nil {
		return err
	}

	grpcLn, err := net.Listen("tcp", s.grpcAddr)
	if err != nil {
		return err
	}
	httpLn, err := net.Listen("tcp", s.httpAddr)
	if err != nil {
		_ = grpcLn.Close()
		return err
	}
	g := grpc.NewServer(grpc.NumStreamWorkers(streamWorkers))
	srv.Register(g)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(g, hs)
	var stopping, unavailable atomic.Bool
	setHealth := func(serving bool) {
		st := healthpb.HealthCheckResponse_SERVING
		if !serving {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		unavailable.Store(!serving)
		hs.SetServingStatus("", st)
		hs.SetServingStatus(rlsv3.RateLimitService_ServiceDesc.ServiceName, st)
	}
	setHealth(true)
	registry := prometheus.NewRegistry()
	registry.MustRegister(metrics, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthcheck", func(w http.ResponseWriter, _ *http.Request) {
		switch {
		case stopping.Load():
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
		case unavailable.Load():
			http.Error(w, "the store is unavailable and the fail mode is error: calls fail", http.StatusServiceUnavailable)
		default:
			_, _ = io.WriteString(w, "OK")
		}
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /rlconfig", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, srv.Config().Dump())
	})
	hsrv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}

	reloadCtx, stopReload := context.WithCancel(ctx)
	defer stopReload()
	reloader := rls.NewReloader(srv, s.config, log)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	if fleetClient != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = srv.ReportFleet(reloadCtx, fleetClient, s.fleetKey, s.instance, s.heartbeat)
		}()
		log.Info("ratelimit-rls: reporting to the fleet", "key", rules.FleetKey(s.fleetKey), "instance", s.instance,
			"version", cfg.Version(), "heartbeat", s.heartbeat)
	}
	wg.Add(4)
	go func() { defer wg.Done(); reloader.Run(reloadCtx, s.reload) }()
	go func() {
		defer wg.Done()
		first := true
		srv.WatchHealth(reloadCtx, healthProbeEvery, func(serving bool) {
			setHealth(serving)
			switch {
			case first:
				first = false
			case serving:
				log.Info("ratelimit-rls: serving again: the store answers")
			default:
				log.Warn("ratelimit-rls: not serving: the store is unavailable and the fail mode is error (gRPC health NOT_SERVING, /healthcheck 503)")
			}
		})
	}()
	go func() { defer wg.Done(); errs <- g.Serve(grpcLn) }()
	go func() {
		defer wg.Done()
		if err := hsrv.Serve(httpLn); !errors.Is(err, http.ErrServerClosed) {
			errs <- err
		}
	}()
	log.Info("ratelimit-rls: serving", "grpc", grpcLn.Addr().String(), "http", httpLn.Addr().String(),
		"config", s.config, "domains", strings.Join(cfg.Domains(), ","), "fail_mode", s.failModes.String(), "timeout", s.timeout)
	if len(cfg.Domains()) == 0 {
		log.Warn("ratelimit-rls: the configuration has no domain: every request is answered OK, with no limit", "config", s.config)
	}
	if ready != nil {
		ready(grpcLn.Addr().String(), httpLn.Addr().String())
	}

	var failed error
	select {
	case <-ctx.Done():
	case failed = <-errs:
	}
	// Unhealthy first, so that balancers stop sending; then the calls in flight finish.
	stopping.Store(true)
	hs.Shutdown()
	log.Info("ratelimit-rls: shutting down", "grace", s.grace)
	graceCtx, cancel := context.WithTimeout(context.Background(), s.grace)
	defer cancel()
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-graceCtx.Done():
		g.Stop()
	}
	_ = hsrv.Shutdown(graceCtx)
	stopReload()
	wg.Wait()
	return failed
}
