package grpclimit_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/a7d3e0dd/ratelimit"
	grpclimit "github.com/a7d3e0dd/ratelimit/adapters/grpc"
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
			u, s := grpclimit.FromGuard(mustGuard(l, ratelimit.WithAccess(ratelimit.Access{Skip: record})))
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

// A peer on a Unix socket (a sidecar proxy, say) has no IP address: its x-forwarded-for is
// read when TrustProxies names "unix", and a call without one has no client IP
// (InvalidArgument), never the socket's quota; without "unix", no call through the socket
// has a client IP.
func TestUnixSocketPeer(t *testing.T) {
	sock := t.TempDir() + "/grpc.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("no Unix sockets: %v", err)
	}
	var (
		mu   sync.Mutex
		keys []string
	)
	record := func(r ratelimit.Request) (string, error) {
		key, err := ratelimit.KeyByIP()(r)
		mu.Lock()
		keys = append(keys, key)
		mu.Unlock()
		return key, err
	}
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute})
	trusted := mustGuard(l, ratelimit.WithKey(record), ratelimit.TrustProxies("X-Forwarded-For", "unix"),
		ratelimit.WithErrorHandler(func(ratelimit.Request, error) {}))
	untrusted := mustGuard(l, ratelimit.WithErrorHandler(func(ratelimit.Request, error) {}))
	byMethod := ratelimit.Switch(func(r ratelimit.Request) *ratelimit.Guard {
		if strings.HasPrefix(r.Route(), "/spec.Items/Login") {
			return untrusted
		}
		return trusted
	})
	srv := grpc.NewServer(interceptors(byMethod)...)
	s := &testServer{}
	srv.RegisterService(serviceDesc(), s)
	go srv.Serve(ln)
	defer srv.Stop()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, m := range modes {
		mu.Lock()
		keys = nil
		mu.Unlock()
		got := []codes.Code{
			call(t, conn, "Get", m.stream, "", "x-forwarded-for", "203.0.113.9").code,
			call(t, conn, "Get", m.stream, "", "x-forwarded-for", "203.0.113.9").code,
			call(t, conn, "Get", m.stream, "").code,
			call(t, conn, "Login", m.stream, "", "x-forwarded-for", "203.0.113.9").code,
		}
		if want := "[OK ResourceExhausted InvalidArgument InvalidArgument]"; fmt.Sprint(got) != want {
			t.Errorf("%s: %v, want %s", m.name, got, want)
		}
		mu.Lock()
		if want := "[ip:203.0.113.9 ip:203.0.113.9 ]"; fmt.Sprint(keys) != want {
			t.Errorf("%s: keys %q, want %s", m.name, keys, want)
		}
		mu.Unlock()
		if err := l.Reset(context.Background(), "ip:203.0.113.9"); err != nil {
			t.Fatal(err)
		}
	}
}

// A call's :path is its full method, and gRPC before v1.79.3 serves one written without its
// leading slash ("spec.Items/GetStream") as the method itself, handing the stream interceptor
// the path as FullMethod (a unary call's FullMethod is its generated constant). Keyed by the
// route as written, each method had two quotas: the route is the full method with its slash.
func TestRouteWithoutLeadingSlash(t *testing.T) {
	var (
		mu     sync.Mutex
		routes []string
	)
	record := func(r ratelimit.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		routes = append(routes, r.Route()+" "+r.Path())
		return false
	}
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute})
	u, s := grpclimit.FromGuard(mustGuard(l, ratelimit.WithKey(ratelimit.KeyByRoute()), ratelimit.WithAccess(ratelimit.Access{Skip: record})))
	srv := startServer(t, false, nil, grpc.UnaryInterceptor(u), grpc.StreamInterceptor(s))
	conn := srv.client(t, "", "")
	var codesGot []codes.Code
	for _, method := range []string{"/spec.Items/GetStream", "spec.Items/GetStream"} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, method)
		if err == nil {
			err = st.SendMsg(&healthpb.HealthCheckRequest{})
		}
		if err == nil {
			err = st.CloseSend()
		}
		if err == nil {
			err = st.RecvMsg(new(healthpb.HealthCheckResponse))
		}
		cancel()
		codesGot = append(codesGot, status.Code(err))
	}
	if codesGot[1] == codes.Unimplemented {
		t.Skip("this gRPC refuses a :path without its leading slash")
	}
	if want := []codes.Code{codes.OK, codes.ResourceExhausted}; !slices.Equal(codesGot, want) {
		mu.Lock()
		defer mu.Unlock()
		t.Errorf("one method, its path with and without the slash: %v, want %v (one quota; routes and paths seen %q)", codesGot, want, routes)
	}
}
