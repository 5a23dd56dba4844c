package main

import (
	"context"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/grpc"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

// grpcConns is how many connections the gRPC load shares, as a gateway's pool would.
const grpcConns = 4

// grpcTarget is three gRPC servers on loopback, one a route (a server takes one chain of
// interceptors), each serving the health service's Check, and the load's clients of each.
type grpcTarget struct {
	e       *env
	servers []*grpc.Server
	conns   []*grpc.ClientConn
	clients map[string][]healthpb.HealthClient // by route, grpcConns each
}

func serveGRPC(e *env, l *ratelimit.Limiter) (target, error) {
	floor := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		p, found := peer.FromContext(ctx)
		if !found {
			return nil, errNoPeer
		}
		if err := e.floor(ctx, p.Addr.String()); err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
	chains := map[string][]grpc.ServerOption{
		"bare":  nil,
		"floor": {grpc.ChainUnaryInterceptor(floor)},
		"ours":  {grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(l))},
	}
	t := &grpcTarget{e: e, clients: map[string][]healthpb.HealthClient{}}
	for _, route := range routes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.close()
			return nil, err
		}
		srv := grpc.NewServer(chains[route]...)
		healthpb.RegisterHealthServer(srv, health.NewServer())
		go func() { _ = srv.Serve(ln) }()
		t.servers = append(t.servers, srv)
		for range grpcConns {
			conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.close()
				return nil, err
			}
			t.conns = append(t.conns, conn)
			t.clients[route] = append(t.clients[route], healthpb.NewHealthClient(conn))
		}
	}
	return t, nil
}

// load calls Check from e.s.conns goroutines over the route's connections, one call at a time
// on each goroutine, every call timed.
func (t *grpcTarget) load(ctx context.Context, route string, d time.Duration) (loadgen.HTTPResult, error) {
	clients := t.clients[route]
	return loadgen.Timed(t.e.s.conns, d, func(g int) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return t.call(ctx, clients[g%len(clients)])
	})
}

// check makes one call of route, its response's header metadata into header.
func (t *grpcTarget) check(ctx context.Context, route string, header *metadata.MD) error {
	return t.call(ctx, t.clients[route][0], grpc.Header(header))
}

// call is one health check through c.
func (t *grpcTarget) call(ctx context.Context, c healthpb.HealthClient, opts ...grpc.CallOption) error {
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, opts...)
	return err
}

func (t *grpcTarget) close() {
	for _, c := range t.conns {
		_ = c.Close()
	}
	for _, s := range t.servers {
		s.Stop()
	}
}
