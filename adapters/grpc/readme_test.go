package grpclimit_test

import (
	"bytes"
	"context"
	"log"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a7d3e0dd/ratelimit"
	grpclimit "github.com/a7d3e0dd/ratelimit/adapters/grpc"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// readmeServer is README's gRPC code, as written, over the authentication interceptor and
// the limiter it names; readmeInAHandler is its last lines, which run in a handler.
func readmeServer(auth grpc.UnaryServerInterceptor, limiter *ratelimit.Limiter) *grpc.Server {
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(auth, grpclimit.UnaryServerInterceptor(limiter, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")))),
		grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(limiter, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")))),
	)
	// or, both from one guard: unary, stream := grpclimit.FromGuard(g)
	return srv // README: the server the test serves
}

func readmeInAHandler(ctx context.Context) {
	// in a handler (a stream's: ss.Context()):
	if d, ok := grpclimit.Decision(ctx); ok {
		log.Printf("%d left", d.Remaining)
	}
}

// TestReadmeServer runs README's gRPC code as written (gofmt's layout of its last line), with
// a limit of 5 calls a minute: calls are keyed by their x-api-key metadata, unary and
// streaming calls of a key share its quota, the authentication interceptor runs before the
// limiter (a call it refuses is not counted), and the 6th call of a key fails with
// ResourceExhausted, a RetryInfo detail and the grpc-retry-pushback-ms trailer of the exact
// wait (12 s, the HTTP Retry-After), without reaching its handler; every call the limiter
// decided has the rate-limit fields as header metadata, and the handler reads its decision.
func TestReadmeServer(t *testing.T) {
	readmetest.Same(t, "gRPC code", append(readmetest.FuncBody(t, "readme_test.go", "readmeServer"), readmetest.FuncBody(t, "readme_test.go", "readmeInAHandler")...),
		readmetest.Gofmt(t, readmetest.Code(readmetest.Containing(t, "../../docs/frameworks.md", "grpclimit.UnaryServerInterceptor(limiter, ratelimit.WithKey(", "go"))))

	var logged bytes.Buffer
	log.SetOutput(&logged)
	log.SetFlags(0)
	t.Cleanup(func() {
		log.SetOutput(os.Stderr)
		log.SetFlags(log.LstdFlags)
	})

	clock := fakeclock.New(fakeclock.T0)
	limiter := mustNew(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Name: "api", Limit: 5, Window: time.Minute})
	auth := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("authorization")) == 0 {
			return nil, status.Error(codes.Unauthenticated, "who are you?")
		}
		return handler(ctx, req)
	}
	srv := readmeServer(auth, limiter)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{addr: ln.Addr().String(), clients: map[string]*grpc.ClientConn{}}
	s.handle = func(ctx context.Context, _ string) error {
		readmeInAHandler(ctx)
		return nil
	}
	srv.RegisterService(serviceDesc(), s)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		for _, c := range s.clients {
			c.Close()
		}
		srv.Stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	conn := s.client(t, "", "")

	if r := call(t, conn, "Get", false, "", "x-api-key", "k1"); r.code != codes.Unauthenticated {
		t.Fatalf("a call the authentication refuses: %v; want Unauthenticated", r)
	}
	for i, stream := range []bool{false, true, false, true, false} {
		r := call(t, conn, "Get", stream, "", "x-api-key", "k1", "authorization", "Bearer k1")
		if r.code != codes.OK {
			t.Fatalf("call %d of k1 (stream %v): %v; want OK", i+1, stream, r)
		}
		if got := [3]string{first(r.header, "x-ratelimit-limit"), first(r.header, "x-ratelimit-remaining"), first(r.header, "x-ratelimit-reset")}; got[0] != "5" || got[1] != strconv.Itoa(4-i) || got[2] == "" {
			t.Errorf("call %d of k1: x-ratelimit-limit, -remaining, -reset %q; want 5, %d, a reset", i+1, got, 4-i)
		}
	}
	for _, stream := range []bool{false, true} {
		r := call(t, conn, "Get", stream, "", "x-api-key", "k1", "authorization", "Bearer k1")
		if r.code != codes.ResourceExhausted || !r.hasRetry || r.retry != 12*time.Second ||
			first(r.trailer, "grpc-retry-pushback-ms") != "12000" || first(r.header, "retry-after") != "12" || first(r.header, "x-ratelimit-remaining") != "0" {
			t.Errorf("the 6th call of k1 in a minute (stream %v): %v; want ResourceExhausted, RetryInfo 12s, pushback 12000, retry-after 12, remaining 0", stream, r)
		}
	}
	if r := call(t, conn, "Get", false, "", "x-api-key", "k2", "authorization", "Bearer k2"); r.code != codes.OK || first(r.header, "x-ratelimit-remaining") != "4" {
		t.Errorf("another API key's first call: %v; want OK, 4 left", r)
	}
	if got := s.calls.Load(); got != 6 {
		t.Errorf("the handler ran %d times; want 6 (5 calls of k1, 1 of k2)", got)
	}
	if want := "4 left\n3 left\n2 left\n1 left\n0 left\n4 left\n"; logged.String() != want {
		t.Errorf("the handler logged %q; want %q", logged.String(), want)
	}
	clock.Advance(12 * time.Second)
	if r := call(t, conn, "Get", false, "", "x-api-key", "k1", "authorization", "Bearer k1"); r.code != codes.OK {
		t.Errorf("k1's call after the pushback: %v; want OK", r)
	}
}

// first returns the first value of the metadata key.
func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}
