package ratelimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// A check is sent to Redis once, whatever the client's retry settings: go-redis retries a
// command whose reply timed out, and a check that charges is not idempotent (issue: one
// request charged 4 times through the middleware, 3 times by a direct Allow).
func TestRedisCheckSentOnce(t *testing.T) {
	for _, c := range []struct {
		name       string
		ctxTimeout bool
		middleware bool
	}{
		{"allow", false, false},
		{"allow/ctxtimeout", true, false},
		{"middleware", false, true},
		{"middleware/ctxtimeout", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := faultproxy.Start(t, redistest.Addr(t))
			client := redis.NewClient(&redis.Options{
				Addr: p.Addr(), ReadTimeout: 300 * time.Millisecond, MaxRetries: 3,
				ContextTimeoutEnabled: c.ctxTimeout,
				PoolSize:              4,
			})
			t.Cleanup(func() { client.Close() })
			prefix := redistest.Prefix(t)
			policy := ratelimit.Policy{Limit: 10, Window: time.Hour}
			l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix)), policy)
			direct := mustNew(t, ratelimit.NewRedisStore(redistest.Standalone(t), ratelimit.WithPrefix(prefix)), policy)
			if _, err := l.Peek(ctx, "warm"); err != nil { // loads the script
				t.Fatal(err)
			}
			openConnections(t, client, 4)
			sent := func() int { return p.Commands("fcall") + p.Commands("evalsha") + p.Commands("eval") }
			before := sent()

			p.Delay(time.Second) // every reply comes after ReadTimeout
			if c.middleware {
				var failed error
				h := ratelimit.Middleware(l, ratelimit.WithKey(func(ratelimit.Request) (string, error) { return "k", nil }),
					ratelimit.WithTimeout(2*time.Second), ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { failed = err }))(okHandler)
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
				if observe.ErrorKind(failed) != "timeout" {
					t.Fatalf("the middleware with every reply held past ReadTimeout reported %v; want an error of kind timeout", failed)
				}
			} else if _, err := l.Allow(context.Background(), "k"); observe.ErrorKind(err) != "timeout" {
				t.Fatalf("Allow with every reply held past ReadTimeout: %v; want an error of kind timeout", err)
			}
			if n := sent() - before; n != 1 {
				t.Errorf("the check was sent to Redis %d times; want once", n)
			}
			// The server ran what it was sent: one charge.
			deadline := time.Now().Add(10 * time.Second)
			for {
				d, err := direct.AllowN(ctx, "k", 0)
				if err != nil {
					t.Fatal(err)
				}
				if d.Remaining < 10 || time.Now().After(deadline) {
					if d.Remaining != 9 {
						t.Errorf("after one request, %d of 10 remain; want 9", d.Remaining)
					}
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// openConnections fills client's pool with n open connections, so that a retry finds one
// rather than dialling (which the faults would fail first).
func openConnections(t *testing.T, client *redis.Client, n int) {
	t.Helper()
	conns := make([]*redis.Conn, n)
	for i := range conns {
		conns[i] = client.Conn()
		if err := conns[i].Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range conns {
		c.Close() // back to the pool, open
	}
}

// Every store call keeps its caller's deadline, whatever the client's timeouts (issue: Allow
// with a 50 ms deadline on a default client returned after 8 s).
func TestRedisCallKeepsDeadline(t *testing.T) {
	for _, ctxTimeout := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "ctxtimeout"}[ctxTimeout], func(t *testing.T) {
			p := faultproxy.Start(t, redistest.Addr(t))
			client := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: ctxTimeout}) // ReadTimeout 3 s, 3 retries
			t.Cleanup(func() { client.Close() })
			l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t))), ratelimit.Policy{Limit: 10, Window: time.Hour})
			charged, err := l.Allow(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			p.Delay(10 * time.Second)
			for _, call := range []struct {
				name string
				fn   func(context.Context) error
			}{
				{"Allow", func(ctx context.Context) error { _, err := l.Allow(ctx, "k"); return err }},
				{"Peek", func(ctx context.Context) error { _, err := l.Peek(ctx, "k"); return err }},
				{"Refund", func(ctx context.Context) error { return l.Settle(ctx, "k", charged, 0) }},
				{"Reset", func(ctx context.Context) error { return l.Reset(ctx, "k") }},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				start := time.Now()
				err := call.fn(ctx)
				took := time.Since(start)
				cancel()
				// The reply is held 10 s and ReadTimeout is 3 s: anything under 5 s kept the
				// deadline, however busy the machine.
				if took > 5*time.Second {
					t.Errorf("%s with a 50 ms deadline returned after %v", call.name, took)
				}
				if observe.ErrorKind(err) != "timeout" {
					t.Errorf("%s past its deadline: %v; want an error of kind timeout", call.name, err)
				}
			}
		})
	}
}
