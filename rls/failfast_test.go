package rls

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// hungRedis is a TCP server that accepts connections and reads from them, and never answers:
// a Redis that hangs (a stopped process, a full machine, a partition that drops replies).
// stop closes it and its connections.
func hungRedis(t *testing.T) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	return ln.Addr().String(), func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}
}

// TestFailFastWithRedisHung answers every call, as the fail mode says, without waiting for the
// Redis client's 5 s timeouts: the server's own bound (DefaultTimeout) ends each store call,
// and the store's breaker opens after a few and answers at once. The bound asserted (1 s a
// call) is far above the server's and far below the client's, so that a loaded machine cannot
// fail it and a server that waits for Redis cannot pass it.
func TestFailFastWithRedisHung(t *testing.T) {
	const redisTimeout = 5 * time.Second
	cfg, err := ParseConfig(File{Name: "test.yaml", Data: []byte(semanticsConfig)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode FailMode
		want string // the summary, or the gRPC code
	}{
		{FailError, "Unavailable"},
		{FailAllow, "OK: OK 0/-, OK 0/-"},
		{FailDeny, "OVER_LIMIT: OVER_LIMIT 0/3/SECOND 1s, OVER_LIMIT 0/10/MINUTE 1m0s"},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			addr, stop := hungRedis(t)
			client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: redisTimeout,
				ReadTimeout: redisTimeout, WriteTimeout: redisTimeout})
			t.Cleanup(func() { _ = client.Close() })
			store := ratelimit.NewRedisStore(client, ratelimit.WithCallTimeout(redisTimeout))
			t.Cleanup(func() { _ = store.Close() })
			t.Cleanup(stop) // first: the store's goroutines, waiting on Redis, end at once
			srv, err := NewServer(store, cfg, WithFailMode(tc.mode), WithLogger(quietLogger()))
			if err != nil {
				t.Fatal(err)
			}
			req := request("edge", desc("ip", "1"), desc("path", "/api/x"))
			var slowest time.Duration
			defer func() { t.Logf("slowest of 20 calls: %v", slowest) }()
			for i := range 20 {
				start := time.Now()
				resp, err := srv.ShouldRateLimit(context.Background(), req)
				took := time.Since(start)
				slowest = max(slowest, took)
				got := status.Code(err).String()
				if err == nil {
					// The reset of a denial the server made is on the wall clock: compare
					// the rest.
					for _, st := range resp.Statuses {
						st.DurationUntilReset = nil
					}
					got = summary(resp)
				}
				want := tc.want
				if tc.mode == FailDeny {
					want = "OVER_LIMIT: OVER_LIMIT 0/3/SECOND, OVER_LIMIT 0/10/MINUTE"
				}
				if got != want {
					t.Fatalf("call %d: got %s, want %s", i, got, want)
				}
				if err != nil && status.Code(err) != codes.Unavailable {
					t.Fatalf("call %d: %v", i, err)
				}
				if took > time.Second {
					t.Fatalf("call %d took %v: it waited for Redis (timeout %v), not the server's bound %v", i, took, redisTimeout, DefaultTimeout)
				}
			}
		})
	}
}

// TestFallbackWithRedisHung decides locally while Redis hangs (ratelimit.WithFallback): every
// call is answered within the bound, and counted, on the share of the limit.
func TestFallbackWithRedisHung(t *testing.T) {
	cfg, err := ParseConfig(File{Name: "test.yaml", Data: []byte(semanticsConfig)})
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := hungRedis(t)
	client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = client.Close() })
	clk := fakeclock.New(fakeclock.T0)
	store := ratelimit.NewRedisStore(client, ratelimit.WithCallTimeout(5*time.Second), ratelimit.WithFallback(0.5), ratelimit.WithClock(clk))
	t.Cleanup(func() { _ = store.Close() })
	t.Cleanup(stop)
	srv, err := NewServer(store, cfg, WithClock(clk), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 7 {
		start := time.Now()
		resp, err := srv.ShouldRateLimit(context.Background(), request("edge", desc("path", "/api/f")))
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("a call took %v: it waited for Redis", took)
		}
		got = append(got, fmt.Sprintf("%s %d/%d", resp.OverallCode, resp.Statuses[0].LimitRemaining, resp.Statuses[0].GetCurrentLimit().GetRequestsPerUnit()))
	}
	// Half of 10 a minute, decided here: 5 admitted, then refused; the limit reported is the
	// file's.
	if got, want := strings.Join(got, ", "), "OK 4/10, OK 3/10, OK 2/10, OK 1/10, OK 0/10, OVER_LIMIT 0/10, OVER_LIMIT 0/10"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
