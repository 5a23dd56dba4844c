package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

func edgeRequest(addr string) *rlsv3.RateLimitRequest {
	return &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlcommon.RateLimitDescriptor{
		{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: "remote_address", Value: addr}}},
	}}
}

// TestMetricsEndpoint serves the metrics at GET /metrics, under the reference's names and the
// server's, at the figures of the calls made.
func TestMetricsEndpoint(t *testing.T) {
	r := start(t, noEnv, "-config", exampleConfig)
	client := rlsv3.NewRateLimitServiceClient(dial(t, r.grpcAddr))
	for range 4 { // 3 a minute: OK, OK, OK, OVER_LIMIT
		if _, err := client.ShouldRateLimit(context.Background(), edgeRequest("10.0.0.1")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("an empty request: %v", err)
	}
	code, body := get(t, "http://"+r.httpAddr+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`ratelimit_service_rate_limit_total_hits{domain="edge",key1="remote_address"} 4`,
		`ratelimit_service_rate_limit_within_limit{domain="edge",key1="remote_address"} 3`,
		`ratelimit_service_rate_limit_near_limit{domain="edge",key1="remote_address"} 1`,
		`ratelimit_service_rate_limit_over_limit{domain="edge",key1="remote_address"} 1`,
		`ratelimit_service_total_requests{grpc_method="ShouldRateLimit"} 5`,
		`ratelimit_service_response_time_seconds_count{grpc_method="ShouldRateLimit"} 5`,
		`ratelimit_service_should_rate_limit_error{err_type="service_error"} 1`,
		`ratelimit_service_config_load_success 1`,
		`ratelimit_rls_calls_total{code="OK"} 3`,
		`ratelimit_rls_calls_total{code="OVER_LIMIT"} 1`,
		`ratelimit_rls_calls_total{code="InvalidArgument"} 1`,
		`ratelimit_rls_statuses_total{code="OVER_LIMIT"} 1`,
		`ratelimit_rls_store_breaker{state="closed"} 1`,
		`ratelimit_rls_serving 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want+"\n") && !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestHealthFollowsRedis stops the test's Redis under a server whose fail mode is error: once
// its calls fail, gRPC health and /healthcheck say so; when Redis is back, the server's own
// probes find it and both say serving again, with no call made.
func TestHealthFollowsRedis(t *testing.T) {
	r := start(t, noEnv, "-config", exampleConfig, "-redis", redistest.Addr(t), "-prefix", redistest.Prefix(t), "-timeout", "1s")
	conn := dial(t, r.grpcAddr)
	client := rlsv3.NewRateLimitServiceClient(conn)
	health := func() (grpcStatus healthpb.HealthCheckResponse_ServingStatus, httpCode int) {
		h, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "envoy.service.ratelimit.v3.RateLimitService"})
		if err != nil {
			t.Fatal(err)
		}
		code, _ := get(t, "http://"+r.httpAddr+"/healthcheck")
		return h.Status, code
	}
	if _, err := client.ShouldRateLimit(context.Background(), edgeRequest("10.0.0.2")); err != nil {
		t.Fatal(err)
	}
	if g, h := health(); g != healthpb.HealthCheckResponse_SERVING || h != 200 {
		t.Fatalf("with Redis up: %v, %d", g, h)
	}

	redistest.Kill(t)
	for {
		_, err := client.ShouldRateLimit(context.Background(), edgeRequest("10.0.0.2"))
		if status.Code(err) == codes.Unavailable {
			break // the fail mode, error, answered
		}
		if err != nil {
			t.Fatalf("with Redis down: %v, want Unavailable", err)
		}
	}
	// The health follows the breaker, on the server's goroutine: poll it (the test's timeout
	// bounds the poll; no time is asserted).
	for {
		if g, h := health(); g == healthpb.HealthCheckResponse_NOT_SERVING && h == 503 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, body := get(t, "http://"+r.httpAddr+"/healthcheck")
	if !strings.Contains(body, "store is unavailable") {
		t.Errorf("/healthcheck says %q", body)
	}
	if _, body := get(t, "http://"+r.httpAddr+"/metrics"); !strings.Contains(body, "ratelimit_rls_serving 0") {
		t.Error("/metrics does not say not serving")
	}
	waitFor(t, r.log, "not serving: the store is unavailable")
	waitFor(t, r.log, "circuit breaker opened") // the store's log is the command's

	redistest.Restart(t)
	for {
		if g, h := health(); g == healthpb.HealthCheckResponse_SERVING && h == 200 {
			break
		}
		// The breaker waits for its next probe on the store's clock, the test's: move it on.
		r.clock.Advance(100 * time.Millisecond)
		time.Sleep(10 * time.Millisecond)
	}
	waitFor(t, r.log, "serving again")
	waitFor(t, r.log, "circuit breaker closed")
	if _, err := client.ShouldRateLimit(context.Background(), edgeRequest("10.0.0.3")); err != nil {
		t.Errorf("with Redis back: %v", err)
	}
}

// TestFailModeSettings reads -fail-mode and RLS_FAIL_MODE, a mode or a list of them.
func TestFailModeSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want string // the modes, or the error's start
	}{
		{nil, "", "error"},
		{[]string{"-fail-mode", "allow"}, "", "allow"},
		{[]string{"-fail-mode", "allow,edge=deny,internal=error"}, "", "allow,edge=deny,internal=error"},
		{nil, "deny,internal=error", "deny,internal=error"},
		{[]string{"-fail-mode", "error"}, "allow", "error"}, // the flag over the environment
		{[]string{"-fail-mode", "allow,edge"}, "", "-fail-mode: rls: fail modes"},
	} {
		s, err := parseSettings(append([]string{"-config", "x"}, tc.args...), func(k string) string {
			if k == "RLS_FAIL_MODE" {
				return tc.env
			}
			return ""
		}, io.Discard)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = s.failModes.String()
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q, RLS_FAIL_MODE=%q: %s, want %s", tc.args, tc.env, got, tc.want)
		}
	}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"-config", exampleConfig, "-near-limit-ratio", "1.5"}, noEnv, io.Discard, &stderr, nil); code != 2 ||
		!strings.Contains(stderr.String(), "-near-limit-ratio") {
		t.Errorf("-near-limit-ratio 1.5: exit %d, %s", code, stderr.String())
	}
}

// stuckRedis is a TCP server that speaks enough of Redis's protocol for a client to connect
// (every command is refused with an error reply, HELLO included), and never answers a command
// naming marker: a Redis that hangs on the call the test cares about. sent reports whether
// such a command arrived.
func stuckRedis(t *testing.T, marker string) (addr string, sent func() bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var arrived bool
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				rd := bufio.NewReader(c)
				for {
					args, err := readCommand(rd)
					if err != nil {
						return
					}
					if strings.Contains(strings.Join(args, " "), marker) {
						mu.Lock()
						arrived = true
						mu.Unlock()
						continue // never answered
					}
					if _, err := io.WriteString(c, "-ERR unknown command\r\n"); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String(), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return arrived
	}
}

// readCommand reads one command of Redis's protocol: an array of bulk strings.
func readCommand(rd *bufio.Reader) ([]string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("not an array: %q", line)
	}
	args := make([]string, n)
	for i := range args {
		line, err := rd.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil {
			return nil, fmt.Errorf("not a bulk string: %q", line)
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

// TestShutdownLetsCallsFinish stops the server (as SIGTERM does) while a call waits on a
// Redis that never answers: the call still gets its answer, the fail mode's once the store's
// bound passes, the health says NOT_SERVING meanwhile, and the command exits 0.
func TestShutdownLetsCallsFinish(t *testing.T) {
	addr, sent := stuckRedis(t, "remote_address=10.9.9.9")
	r := start(t, noEnv, "-config", exampleConfig, "-redis", addr, "-fail-mode", "allow", "-timeout", "2s", "-shutdown-grace", "1m")
	conn := dial(t, r.grpcAddr)
	answered := make(chan error, 1)
	go func() {
		resp, err := rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(context.Background(), edgeRequest("10.9.9.9"))
		if err == nil && resp.OverallCode != rlsv3.RateLimitResponse_OK {
			err = status.Errorf(codes.Internal, "answered %v, want OK (the fail mode)", resp.OverallCode)
		}
		answered <- err
	}()
	for !sent() { // the call is at the store: in flight (the test's timeout bounds the poll)
		time.Sleep(5 * time.Millisecond)
	}
	exit := make(chan int, 1)
	go func() { exit <- r.stop() }()
	waitFor(t, r.log, "shutting down")
	h, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err == nil && h.Status != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health while shutting down: %v", h.Status)
	}
	if err := <-answered; err != nil {
		t.Errorf("the call in flight: %v", err)
	}
	if code := <-exit; code != 0 {
		t.Errorf("exit code %d, want 0:\n%s", code, r.log)
	}
}
