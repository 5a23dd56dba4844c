package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// syncBuffer is a buffer the server's goroutines write to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// running is a server the command runs in this process.
type running struct {
	grpcAddr, httpAddr string
	stop               func() int // ends it as SIGTERM does and returns its exit code
	log                *syncBuffer
	clock              *fakeclock.Clock // the store's and the server's
}

func noEnv(string) string { return "" }

// start runs the command with args (on loopback ports of its own) and env until the test ends.
func start(t *testing.T, env func(string) string, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan [2]string, 1)
	code := make(chan int, 1)
	log := &syncBuffer{}
	args = append(args, "-grpc-addr", "127.0.0.1:0", "-http-addr", "127.0.0.1:0")
	clk := fakeclock.New(fakeclock.T0)
	e := &embedding{clock: clk, ready: func(g, h string) { addrs <- [2]string{g, h} }}
	go func() { code <- run(ctx, args, env, io.Discard, log, e) }()
	var r *running
	select {
	case a := <-addrs:
		r = &running{grpcAddr: a[0], httpAddr: a[1], log: log, clock: clk}
	case c := <-code:
		cancel()
		t.Fatalf("the command exited %d before serving:\n%s", c, log)
	}
	var once sync.Once
	exit := -1
	r.stop = func() int {
		once.Do(func() { cancel(); exit = <-code })
		return exit
	}
	t.Cleanup(func() { r.stop() })
	return r
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const exampleConfig = "../../example/config"

// TestServe runs the command over each store, and asks it what Envoy and a balancer would.
func TestServe(t *testing.T) {
	for _, tc := range []struct {
		name  string
		redis func(t *testing.T) []string
	}{
		{"memory", func(*testing.T) []string { return nil }},
		{"redis", func(t *testing.T) []string {
			return []string{"-redis", redistest.Addr(t), "-prefix", redistest.Prefix(t), "-timeout", "1m"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := start(t, noEnv, append([]string{"-config", exampleConfig}, tc.redis(t)...)...)
			conn := dial(t, r.grpcAddr)
			client := rlsv3.NewRateLimitServiceClient(conn)
			req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlcommon.RateLimitDescriptor{
				{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.0.0.1"}}},
			}}
			var got []string
			for range 4 {
				resp, err := client.ShouldRateLimit(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, resp.OverallCode.String())
			}
			if calls, want := strings.Join(got, ","), "OK,OK,OK,OVER_LIMIT"; calls != want {
				t.Errorf("four calls: %s, want %s", calls, want)
			}
			if _, err := client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{}); status.Code(err) != codes.InvalidArgument {
				t.Errorf("an empty request: %v, want InvalidArgument", err)
			}
			for _, service := range []string{"", "envoy.service.ratelimit.v3.RateLimitService"} {
				h, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
				if err != nil || h.Status != healthpb.HealthCheckResponse_SERVING {
					t.Errorf("health of %q: %v, %v; want SERVING", service, h, err)
				}
			}
			if code, body := get(t, "http://"+r.httpAddr+"/healthcheck"); code != 200 || body != "OK" {
				t.Errorf("/healthcheck: %d %q, want 200 OK", code, body)
			}
			if _, body := get(t, "http://"+r.httpAddr+"/rlconfig"); !strings.Contains(body, "edge.remote_address: unit=MINUTE requests_per_unit=3") {
				t.Errorf("/rlconfig lacks the rule:\n%s", body)
			}
			if code := r.stop(); code != 0 {
				t.Errorf("exit code %d after SIGTERM, want 0:\n%s", code, r.log)
			}
			if !strings.Contains(r.log.String(), "shutting down") {
				t.Errorf("no shutdown in the log:\n%s", r.log)
			}
			if _, err := http.Get("http://" + r.httpAddr + "/healthcheck"); err == nil {
				t.Error("the HTTP port still answers after the shutdown")
			}
		})
	}
}

// TestServeReloads edits the configuration under a running server.
func TestServeReloads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "edge.yaml")
	rule := func(n string) string {
		return "domain: edge\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: " + n + "}\n"
	}
	if err := os.WriteFile(path, []byte(rule("1")), 0o644); err != nil {
		t.Fatal(err)
	}
	r := start(t, func(k string) string {
		return map[string]string{"RUNTIME_ROOT": dir, "RUNTIME_APPDIRECTORY": ".", "RLS_RELOAD": "10ms",
			"LIMIT_RESPONSE_HEADERS_ENABLED": "true", "LIMIT_RESET_HEADER": "X-Reset"}[k]
	})
	client := rlsv3.NewRateLimitServiceClient(dial(t, r.grpcAddr))
	limit := func() uint32 {
		resp, err := client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge",
			Descriptors: []*rlcommon.RateLimitDescriptor{{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Statuses[0].GetCurrentLimit().GetRequestsPerUnit()
	}
	if got := limit(); got != 1 {
		t.Fatalf("limit %d, want 1", got)
	}
	resp, err := client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge",
		Descriptors: []*rlcommon.RateLimitDescriptor{{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: "k", Value: "w"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, h := range resp.ResponseHeadersToAdd {
		hs = append(hs, h.Key+"="+h.Value)
	}
	if got, want := strings.Join(hs, " "), "RateLimit-Limit=1 RateLimit-Remaining=0 X-Reset=1"; got != want {
		t.Errorf("headers %q, want %q (the environment's)", got, want)
	}
	if err := os.WriteFile(path, []byte(rule("7")), 0o644); err != nil {
		t.Fatal(err)
	}
	// The reload is the server's own, every 10 ms: wait for its log line, not for a time.
	waitFor(t, r.log, "configuration reloaded")
	if got := limit(); got != 7 {
		t.Errorf("after the edit, limit %d, want 7", got)
	}
	if err := os.WriteFile(path, []byte(rule("-1")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r.log, "edge.yaml:4: requests_per_unit must be a whole number")
	if got := limit(); got != 7 {
		t.Errorf("after a bad edit, limit %d, want 7 still", got)
	}
}

// waitFor waits until the log has want; the test's own deadline bounds it.
func waitFor(t *testing.T, log *syncBuffer, want string) {
	t.Helper()
	for !strings.Contains(log.String(), want) {
		if t.Context().Err() != nil {
			t.Fatalf("the log never had %q:\n%s", want, log)
		}
		time.Sleep(5 * time.Millisecond) // a poll of the log, not a deadline
	}
}

func TestStartRefused(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("domain: edge\ndescriptors:\n  - key: a\n    rate_limit: {unlimited: true, unit: second}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad config", []string{"-config", bad}, 1, "bad.yaml:4: should not specify rate limit unit when unlimited"},
		{"missing config", []string{"-config", filepath.Join(dir, "none")}, 1, "no such file"},
		{"no config", nil, 2, "no configuration"},
		{"bad fail mode", []string{"-config", bad, "-fail-mode", "maybe"}, 2, "fail mode"},
		{"bad timeout", []string{"-config", bad, "-timeout", "0"}, 2, "-timeout"},
		{"fallback without redis", []string{"-config", bad, "-fallback", "0.5"}, 2, "-fallback needs -redis"},
		{"bad fallback", []string{"-config", bad, "-fallback", "2"}, 2, "-fallback"},
		{"bad headers", []string{"-config", bad, "-response-headers", "some"}, 2, "-response-headers"},
		{"bad shadow", []string{"-config", bad, "-shadow-mode", "perhaps"}, 2, "-shadow-mode"},
		{"argument", []string{"-config", bad, "extra"}, 2, "unexpected argument"},
		{"bad redis", []string{"-config", exampleConfig, "-redis", "redis://h:notaport"}, 1, "-redis"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), tc.args, noEnv, io.Discard, &stderr, nil)
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tc.code, tc.want)
			}
		})
	}
}

func TestCheckUsage(t *testing.T) {
	for _, args := range [][]string{{"check"}, {"check", "edge"}, {"check", "edge", "novalue"}} {
		var stderr bytes.Buffer
		if code := run(context.Background(), args, noEnv, io.Discard, &stderr, nil); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}
