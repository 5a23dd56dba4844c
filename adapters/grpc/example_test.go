package grpclimit_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/grpc"
)

// serveHealth serves the gRPC health service on loopback with the server options, and returns
// a client of it and a function that stops both.
func serveHealth(opts ...grpc.ServerOption) (healthpb.HealthClient, func()) {
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	return healthpb.NewHealthClient(conn), func() { conn.Close(); srv.Stop() }
}

// show prints the code of a call, the remaining quota its header metadata tells, and the
// delay of its RetryInfo, rounded to the second.
func show(err error, header metadata.MD) {
	st := status.Convert(err)
	fmt.Print(st.Code(), " remaining=", header.Get("x-ratelimit-remaining"))
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			fmt.Print(" retry in ", ri.GetRetryDelay().AsDuration().Round(time.Second))
		}
	}
	fmt.Println()
}

// Limit every method of a gRPC server to 2 calls per minute per client IP. The third call is
// refused with ResourceExhausted and a RetryInfo detail; every call carries the rate-limit
// fields in its header metadata.
func Example() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Name: "api", Limit: 2, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	client, stop := serveHealth(
		grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(limiter)),
		grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(limiter)),
	)
	defer stop()

	for range 3 {
		var header metadata.MD
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		show(err, header)
	}
	// Output:
	// OK remaining=[1]
	// OK remaining=[0]
	// ResourceExhausted remaining=[0] retry in 30s
}

// Key calls by their x-api-key metadata and refuse calls without one (Unauthenticated), with
// one guard for unary and streaming calls.
func ExampleFromGuard() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Name: "per-key", Limit: 100, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	g, err := ratelimit.NewGuard(limiter, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")), ratelimit.WithAccess(ratelimit.Access{MissingKey: 401}))
	if err != nil {
		panic(err)
	}
	unary, stream := grpclimit.FromGuard(g)
	client, stop := serveHealth(grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream))
	defer stop()

	for _, ctx := range []context.Context{
		context.Background(),
		metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "k1"),
	} {
		var header metadata.MD
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header))
		show(err, header)
	}
	// Output:
	// Unauthenticated remaining=[]
	// OK remaining=[99]
}

// A handler, or an interceptor after the limiter's, reads the limiter's decision about its
// call.
func ExampleDecision() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Name: "api", Limit: 10, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	quota := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		if d, ok := grpclimit.Decision(ctx); ok {
			fmt.Printf("%s: %d of %d left under %q\n", info.FullMethod, d.Remaining, d.Limit, d.Policy.Name)
		}
		return next(ctx, req)
	}
	client, stop := serveHealth(grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(limiter), quota))
	defer stop()

	if _, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		panic(err)
	}
	// Output: /grpc.health.v1.Health/Check: 9 of 10 left under "api"
}
