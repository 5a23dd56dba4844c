package grpclimit_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/grpc"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// engines are the stores the tests run against: the memory store and a real Redis.
var engines = []struct {
	name  string
	store func(t *testing.T, opts ...ratelimit.StoreOption) ratelimit.Store
}{
	{"memory", func(_ *testing.T, opts ...ratelimit.StoreOption) ratelimit.Store {
		return ratelimit.NewMemoryStore(opts...)
	}},
	{"redis", func(t *testing.T, opts ...ratelimit.StoreOption) ratelimit.Store {
		redisOpts := []ratelimit.RedisOption{ratelimit.WithPrefix(redistest.Prefix(t))}
		for _, o := range opts {
			redisOpts = append(redisOpts, o)
		}
		return ratelimit.NewRedisStore(redistest.Standalone(t), redisOpts...)
	}},
}

// With a policy of 5 calls per minute, the sixth call of a client is refused with
// ResourceExhausted, a RetryInfo detail and the pushback trailer, and every call carries the
// rate-limit fields: the same for unary and streaming calls, over the memory store and Redis,
// through a real server whose client is its real peer, 127.0.0.1.
func TestSixthCallRefused(t *testing.T) {
	for _, e := range engines {
		for _, m := range modes {
			t.Run(e.name+"/"+m.name, func(t *testing.T) {
				l := mustNew(e.store(t), ratelimit.Policy{Name: "minute", Limit: 5, Window: time.Minute})
				srv := startServer(t, false, nil, interceptors(mustGuard(l))...)
				conn := srv.client(t, "", "")
				for i := range 5 {
					r := call(t, conn, "Get", m.stream, "")
					if r.code != codes.OK || r.header.Get("x-ratelimit-limit")[0] != "5" ||
						r.header.Get("x-ratelimit-remaining")[0] != strconv.Itoa(4-i) {
						t.Fatalf("call %d: %v; want OK with x-ratelimit-limit 5 and x-ratelimit-remaining %d", i+1, r, 4-i)
					}
					if d := srv.lastDecision(); !d.ok || d.d.Remaining != int64(4-i) || d.d.Policy.Name != "minute" {
						t.Errorf("call %d: the handler's decision %+v", i+1, d)
					}
				}
				r := call(t, conn, "Get", m.stream, "")
				// GCRA: one call every 12 s, so the sixth waits 12 s less the time the calls took.
				if r.code != codes.ResourceExhausted || !r.hasRetry || r.retry <= 10*time.Second || r.retry > 12*time.Second {
					t.Fatalf("call 6: %v; want ResourceExhausted with RetryInfo of 10 to 12 s", r)
				}
				if got, want := r.trailer.Get(grpclimit.PushbackKey), strconv.FormatInt(r.retry.Milliseconds(), 10); len(got) != 1 || got[0] != want {
					t.Errorf("call 6: trailer %s %q, want [%s]", grpclimit.PushbackKey, got, want)
				}
				for key, want := range map[string]string{"x-ratelimit-limit": "5", "x-ratelimit-remaining": "0", "retry-after": "12"} {
					if got := r.header.Get(key); len(got) != 1 || got[0] != want {
						t.Errorf("call 6: header %s %q, want [%s]", key, got, want)
					}
				}
				if r.msg != "Too Many Requests: Rate limit exceeded. Retry in 12 seconds." {
					t.Errorf("call 6: message %q", r.msg)
				}
				if n := srv.calls.Load(); n != 5 {
					t.Errorf("the handler ran %d times, want 5", n)
				}
			})
		}
	}
}
