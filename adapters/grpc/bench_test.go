package grpclimit_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/grpc"
)

// discardStream is the cheapest grpc.ServerTransportStream, so a benchmark measures the
// interceptor: it keeps nothing of what it is sent.
type discardStream struct{}

func (discardStream) Method() string                  { return "/spec.Items/Get" }
func (discardStream) SetHeader(metadata.MD) error     { return nil }
func (discardStream) SendHeader(metadata.MD) error    { return nil }
func (discardStream) SetTrailer(md metadata.MD) error { return nil }

// BenchmarkUnary measures the unary interceptor with the memory store and one policy, called as
// the gRPC server calls it (a context with the peer, the incoming metadata and the transport
// stream): admitted calls, with the decision in the handler's context, and denied calls, with
// their status, RetryInfo and trailer. bare is the handler alone.
func BenchmarkUnary(b *testing.B) {
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1234}})
	ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("x-api-key", "k"))
	ctx = grpc.NewContextWithServerTransportStream(ctx, discardStream{})
	info := &grpc.UnaryServerInfo{FullMethod: "/spec.Items/Get"}
	handler := func(ctx context.Context, req any) (any, error) { return req, nil }
	admit := grpclimit.UnaryServerInterceptor(mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1e9, Window: time.Hour}))
	deny := grpclimit.UnaryServerInterceptor(mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Hour}))
	_, _ = deny(ctx, nil, info, handler) // uses up the quota
	for _, bc := range []struct {
		name string
		call func() error
	}{
		{"bare", func() error { _, err := handler(ctx, nil); return err }},
		{"admitted", func() error { _, err := admit(ctx, nil, info, handler); return err }},
		{"denied", func() error {
			if _, err := deny(ctx, nil, info, handler); err == nil {
				return context.Canceled // not denied: fail the benchmark
			}
			return nil
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
