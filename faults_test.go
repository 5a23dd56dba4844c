package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// Redis crashes while traffic runs: requests keep being served (fail-open), the error handler
// hears of every failure as of kind unavailable, and once Redis is back — empty, with no
// scripts — limiting resumes by itself: at once without a breaker, and after the cool-down with
// the default one, which meanwhile answers without calling Redis. A refused connection fails at
// once, so the deadline is generous: on a busy machine a slow but healthy Redis must not pass for
// a dead one. (Deadlines themselves are tested on injected time, in the HTTP spec.)
func TestRedisCrashWhileServing(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ctxTimeout bool
		breaker    bool
	}{
		{"default-client", false, true},
		{"ctxtimeout-client", true, true},
		{"default-client-no-breaker", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), ContextTimeoutEnabled: tc.ctxTimeout, MaxRetries: -1})
			t.Cleanup(func() { client.Close() })
			clock := fakeclock.New(fakeclock.T0)
			// Without the denial cache, which would go on answering the denied client while
			// Redis is down (TestDenialCacheOutlivesAnOutage): here every request is to call it.
			opts := []ratelimit.RedisOption{ratelimit.WithClock(clock), ratelimit.WithDenialCache(0)}
			if !tc.breaker {
				opts = append(opts, ratelimit.WithBreaker(0, 0))
			}
			store := redisStore(t, client, opts...)
			l := mustNew(t, store, ratelimit.Policy{Limit: 3, Window: time.Hour})
			var failures atomic.Int64
			h := ratelimit.Middleware(l, ratelimit.WithTimeout(time.Minute),
				ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) {
					if k := observe.ErrorKind(err); k != "unavailable" && k != "breaker_open" {
						t.Errorf("error %v is of kind %q; want unavailable, or breaker_open once the breaker opened", err, k)
					}
					failures.Add(1)
				}))(okHandler)
			serve := func() int {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
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
			deadline := time.Now().Add(time.Minute)
			for client.Ping(ctx).Err() != nil && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond) // waits for a process to start, not for a clock
			}
			if tc.breaker { // open since the fifth failure: no call to Redis until the cool-down ends
				failures.Store(0)
				if got := codes(2); !slices.Equal(got, []int{200, 200}) || failures.Load() != 2 {
					t.Fatalf("breaker open: %v with %d failures, want 2 answered by the fail mode", got, failures.Load())
				}
				if info := client.Info(ctx, "commandstats").Val(); strings.Contains(info, "cmdstat_eval") {
					t.Fatalf("the open breaker let script calls through to the restarted Redis:\n%s", info)
				}
				clock.Advance(breakerCooldown)
			}
			failures.Store(0)
			if got := codes(4); !slices.Equal(got, []int{200, 200, 200, 429}) || failures.Load() != 0 {
				t.Fatalf("after the restart: %v with %d failures, want limiting to resume", got, failures.Load())
			}
		})
	}
}
