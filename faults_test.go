package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/redistest"
)

// Redis crashes while traffic runs: requests keep being served (fail-open) within the store
// deadline, the error handler hears of it, and once Redis is back — empty, with no scripts —
// limiting resumes by itself.
func TestRedisCrashWhileServing(t *testing.T) {
	for _, ctxTimeout := range []bool{false, true} {
		t.Run(map[bool]string{false: "default-client", true: "ctxtimeout-client"}[ctxTimeout], func(t *testing.T) {
			client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), ContextTimeoutEnabled: ctxTimeout, MaxRetries: -1})
			t.Cleanup(func() { client.Close() })
			store := redisStore(t, client)
			l := mustNew(t, store, ratelimit.Policy{Limit: 3, Window: time.Hour})
			var failures atomic.Int64
			h := ratelimit.Middleware(l, ratelimit.WithTimeout(50*time.Millisecond),
				ratelimit.WithErrorHandler(func(ratelimit.Request, error) { failures.Add(1) }))(okHandler)
			serve := func() int {
				w := httptest.NewRecorder()
				start := time.Now()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
				if d := time.Since(start); d > 2*time.Second {
					t.Fatalf("a request took %v with a 50ms store deadline", d)
				}
				return w.Code
			}
			codes := func(n int) (out []int) {
				for i := 0; i < n; i++ {
					out = append(out, serve())
				}
				return out
			}

			if got := codes(4); !slices.Equal(got, []int{200, 200, 200, 429}) {
				t.Fatalf("before the crash: %v", got)
			}
			redistest.Kill(t)
			if got := codes(5); !slices.Equal(got, []int{200, 200, 200, 200, 200}) {
				t.Fatalf("while Redis is down (fail-open): %v", got)
			}
			if failures.Load() != 5 {
				t.Fatalf("the error handler heard of %d failures, want 5", failures.Load())
			}
			redistest.Restart(t)
			// The first call after the restart may still find a dead pooled connection.
			deadline := time.Now().Add(5 * time.Second)
			for client.Ping(ctx).Err() != nil && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond) // waits for a process to start, not for a clock
			}
			failures.Store(0)
			if got := codes(4); !slices.Equal(got, []int{200, 200, 200, 429}) || failures.Load() != 0 {
				t.Fatalf("after the restart: %v with %d failures, want limiting to resume", got, failures.Load())
			}
		})
	}
}
