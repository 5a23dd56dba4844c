package grpclimit_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/grpc"
)

// TestRequest checks what key functions see of a call, unary and streaming, through a real
// server whose client is its real peer: the full method as route and path, POST as method,
// the metadata as headers (lower-case keys, several values joined, Host as the :authority),
// the peer's address, and the values an authentication interceptor put in the context.
func TestRequest(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				seen string
				ip   string
			)
			record := func(r ratelimit.Request) bool {
				key, err := ratelimit.KeyByIP()(r)
				mu.Lock()
				defer mu.Unlock()
				seen = fmt.Sprintf("route=%s path=%s method=%s key=%s KEY=%s multi=%q host=%s absent=%q user=%v none=%v ctx=%v",
					r.Route(), r.Path(), r.Method(), r.Header("x-api-key"), r.Header("X-API-Key"), r.Header("X-Multi"),
					r.Header("Host"), r.Header("X-Absent"), r.Value(userKey{}), r.Value("none"), r.Context() != nil)
				ip = fmt.Sprintf("%s %v remote=%s", key, err, r.RemoteAddr())
				return true
			}
			l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 10, Window: time.Minute})
			u, s := grpclimit.FromGuard(mustGuard(l, ratelimit.WithSkip(record)))
			srv := startServer(t, false, nil, grpc.ChainUnaryInterceptor(authUnary, u), grpc.ChainStreamInterceptor(authStream, s))
			r := call(t, srv.client(t, "", ""), "Get", m.stream, "", "x-api-key", "k", "x-multi", "a", "x-multi", "b", "x-user", "ann")
			if r.code != codes.OK {
				t.Fatalf("call: %v", r)
			}
			method := "/spec.Items/Get"
			if m.stream {
				method += "Stream"
			}
			want := fmt.Sprintf(`route=%s path=%s method=POST key=k KEY=k multi="a, b" host=spec.test absent="" user=ann none=<nil> ctx=true`, method, method)
			mu.Lock()
			defer mu.Unlock()
			if seen != want {
				t.Errorf("the request:\n got %s\nwant %s", seen, want)
			}
			if !strings.HasPrefix(ip, "ip:127.0.0.1 <nil> remote=127.0.0.1:") {
				t.Errorf("client IP: %s, want ip:127.0.0.1 from the peer 127.0.0.1", ip)
			}
		})
	}
}

// Outside a gRPC server (an interceptor called directly, as in a unit test of a handler), a
// call has no peer and no metadata: the default key, the client IP, cannot be read, and the
// guard answers InvalidArgument rather than limiting every such call as one.
func TestNoPeer(t *testing.T) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 10, Window: time.Minute})
	u := grpclimit.UnaryServerInterceptor(l, ratelimit.WithErrorHandler(func(ratelimit.Request, error) {}))
	_, err := u(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/x.Y/Z"}, func(context.Context, any) (any, error) {
		t.Error("the handler ran")
		return nil, nil
	})
	if statusCode(err) != codes.InvalidArgument {
		t.Errorf("got %v, want InvalidArgument", err)
	}
	// A key that needs no peer works.
	u = grpclimit.UnaryServerInterceptor(l, ratelimit.WithKey(ratelimit.KeyByRoute()))
	ran := false
	if _, err := u(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/x.Y/Z"}, func(ctx context.Context, _ any) (any, error) {
		d, ok := grpclimit.Decision(ctx)
		ran = ok && d.Remaining == 9
		return nil, nil
	}); err != nil || !ran {
		t.Errorf("keyed by route: %v, handler ran with the decision: %v", err, ran)
	}
}
