package ratelimit_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// TestRedisAllocations holds a check through the Redis store to the allocations of go-redis's
// own EVALSHA of "return 1" on one key (the floor), measured in the same test, with and
// without ContextTimeoutEnabled; and the net/http middleware over it, with its handler, to
// that EVALSHA then the handler; and a check with compact state to the same floor. The check's reply is read as integers (none boxed), the
// store's own bound of a call whose context cannot end (context.Background()) is a deadline
// shared per grain, with a goroutine only for a client that does not give up at deadlines,
// and the guard's deadline for such a request is one object (see deadline.go). Allocation counts are deterministic.
func TestRedisAllocations(t *testing.T) {
	if raceDetector {
		t.Skip("allocation counts under the race detector are not the program's")
	}
	_ = redistest.Standalone(t)
	never := ratelimit.Policy{Limit: 1_000_000, Window: time.Second}
	trivial := redis.NewScript("return 1")
	for _, contextTimeout := range []bool{true, false} {
		t.Run("ContextTimeoutEnabled="+strconv.FormatBool(contextTimeout), func(t *testing.T) {
			client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), ContextTimeoutEnabled: contextTimeout})
			t.Cleanup(func() { client.Close() })
			ctx := context.Background()
			if err := trivial.Load(ctx, client).Err(); err != nil {
				t.Fatal(err)
			}
			l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t))), never)
			key := "ip:203.0.113.7"
			if _, err := l.Allow(ctx, key); err != nil { // loads the function
				t.Fatal(err)
			}
			floor := testing.AllocsPerRun(200, func() { trivial.Run(ctx, client, []string{key}) })
			check := testing.AllocsPerRun(200, func() {
				if _, err := l.Allow(ctx, key); err != nil {
					t.Error(err)
				}
			})
			if check > floor {
				t.Errorf("a check allocates %v times, EVALSHA of return 1 %v; want at most as many", check, floor)
			}
			// go-redis's least command: the check's own work (its keys, arguments and reply,
			// its deadline) allocates nothing beyond it.
			// A client that does not give up at the deadline has the store keep its bound
			// (WithCallTimeout) from a goroutine of the call's own: one closure more.
			ping := testing.AllocsPerRun(200, func() { client.Ping(ctx) })
			if !contextTimeout {
				ping++
			}
			if check > ping {
				t.Errorf("a check allocates %v times, PING %v; want at most as many", check, ping)
			}
			// Compact state: the key's digests are computed on the stack, and the denial
			// cache's name of the identity (its digest) is one string more.
			compact := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithCompactState()), never)
			if n := testing.AllocsPerRun(200, func() {
				if _, err := compact.Allow(ctx, key); err != nil {
					t.Error(err)
				}
			}); n > floor {
				t.Errorf("a check with compact state allocates %v times, EVALSHA of return 1 %v; want at most as many", n, floor)
			}
			// Hash state, under three policies: the identity's hash is one key, built once.
			hashed := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithHashState()),
				never, ratelimit.Policy{Name: "minute", Limit: 1 << 30, Window: time.Minute}, ratelimit.Policy{Name: "hour", Limit: 1 << 30, Window: time.Hour})
			if n := testing.AllocsPerRun(200, func() {
				if _, err := hashed.Allow(ctx, key); err != nil {
					t.Error(err)
				}
			}); n > floor {
				t.Errorf("a check of three policies with hash state allocates %v times, EVALSHA of return 1 %v; want at most as many", n, floor)
			}
			if !contextTimeout {
				return // the guard's deadline then needs the store's goroutine
			}
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = "203.0.113.7:1234"
			w := &discardWriter{h: http.Header{}}
			serve := func(h http.Handler) float64 {
				return testing.AllocsPerRun(200, func() {
					clear(w.h)
					h.ServeHTTP(w, r)
				})
			}
			mw := serve(ratelimit.Middleware(l, ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { t.Error(err) }))(okHandler))
			floorMW := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				host, _, _ := net.SplitHostPort(r.RemoteAddr)
				trivial.Run(r.Context(), client, []string{"ip:" + host})
				okHandler.ServeHTTP(w, r)
			}))
			if mw > floorMW {
				t.Errorf("the middleware and its handler allocate %v times, EVALSHA then the handler %v; want at most as many", mw, floorMW)
			}
		})
	}
}
