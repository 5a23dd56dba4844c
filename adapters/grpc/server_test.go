package grpclimit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/grpc"
)

// The test service, "spec.Items", is written by hand (no protoc): its messages are those of
// the health service. Get, Health and Login are unary; GetStream, HealthStream and
// LoginStream are server-streaming (the client sends one request, the server answers one
// message). Each handler answers the code named by the request's Service field ("" is OK),
// through the handler function of the server.
const service = "spec.Items"

// handlerFunc is what every method of the test service does: it returns the call's error,
// given the call's context (a stream's ss.Context()) and the request's argument.
type handlerFunc func(ctx context.Context, arg string) error

// testServer is the test service on a real gRPC server on loopback.
type testServer struct {
	addr   string
	handle handlerFunc
	calls  atomic.Int64 // handler calls
	// peers: the listener takes each connection's peer address from the connection's first
	// line (see peerListener), so that a test can call from any address.
	peers bool

	mu        sync.Mutex
	decisions []decided // what each handler call saw
	clients   map[string]*grpc.ClientConn
}

// decided is what a handler found with grpclimit.Decision.
type decided struct {
	d  ratelimit.Decision
	ok bool
}

// serviceDesc is the description of the test service, its handlers calling the server's.
func serviceDesc() *grpc.ServiceDesc {
	desc := &grpc.ServiceDesc{ServiceName: service, HandlerType: (*any)(nil)}
	for _, name := range []string{"Get", "Health", "Login"} {
		desc.Methods = append(desc.Methods, grpc.MethodDesc{
			MethodName: name,
			Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
				in := new(healthpb.HealthCheckRequest)
				if err := dec(in); err != nil {
					return nil, err
				}
				s := srv.(*testServer)
				h := func(ctx context.Context, req any) (any, error) {
					if err := s.serve(ctx, req.(*healthpb.HealthCheckRequest).GetService()); err != nil {
						return nil, err
					}
					return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
				}
				if interceptor == nil {
					return h(ctx, in)
				}
				return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + service + "/" + name}, h)
			},
		})
		desc.Streams = append(desc.Streams, grpc.StreamDesc{
			StreamName:    name + "Stream",
			ServerStreams: true,
			Handler: func(srv any, ss grpc.ServerStream) error {
				in := new(healthpb.HealthCheckRequest)
				if err := ss.RecvMsg(in); err != nil {
					return err
				}
				if err := srv.(*testServer).serve(ss.Context(), in.GetService()); err != nil {
					return err
				}
				return ss.SendMsg(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
			},
		})
	}
	return desc
}

// serve is the handler of every method.
func (s *testServer) serve(ctx context.Context, arg string) error {
	s.calls.Add(1)
	d, ok := grpclimit.Decision(ctx)
	s.mu.Lock()
	s.decisions = append(s.decisions, decided{d, ok})
	s.mu.Unlock()
	if s.handle != nil {
		return s.handle(ctx, arg)
	}
	return replyCode(arg)
}

// replyCode returns the error of the code named arg: "" and "OK" are no error.
func replyCode(arg string) error {
	if arg == "" || arg == "OK" {
		return nil
	}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if c.String() == arg {
			return status.Error(c, "the handler says "+arg)
		}
	}
	return status.Errorf(codes.Internal, "test: unknown code %q", arg)
}

// startServer starts the test service with the server options on 127.0.0.1, stopped when the
// test ends. With peers set, each connection's peer address is the one its client names (see
// [testServer.client]); otherwise it is the real one, 127.0.0.1.
func startServer(t *testing.T, peers bool, handle handlerFunc, opts ...grpc.ServerOption) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{addr: ln.Addr().String(), handle: handle, peers: peers, clients: map[string]*grpc.ClientConn{}}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(serviceDesc(), s)
	var served net.Listener = ln
	if peers {
		served = peerListener{ln}
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(served) }()
	t.Cleanup(func() {
		s.mu.Lock()
		for _, c := range s.clients {
			c.Close()
		}
		s.mu.Unlock()
		srv.Stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// client returns a client connection to the server, from the peer address remote when the
// server takes peers from its clients (remote is ignored otherwise), for the authority
// (default "spec.test"). Connections are kept and shared by the calls of a test.
func (s *testServer) client(t *testing.T, remote, authority string) *grpc.ClientConn {
	t.Helper()
	if authority == "" {
		authority = "spec.test"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := remote + " " + authority
	if c, ok := s.clients[id]; ok {
		return c
	}
	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", s.addr)
		if err != nil || !s.peers {
			return c, err
		}
		if _, err := io.WriteString(c, remote+"\n"); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	c, err := grpc.NewClient("passthrough:///"+authority, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	s.clients[id] = c
	return c
}

// lastDecision returns what the handler's last call found with grpclimit.Decision.
func (s *testServer) lastDecision() decided {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.decisions) == 0 {
		return decided{}
	}
	return s.decisions[len(s.decisions)-1]
}

// peerListener gives each connection the peer address its client writes on the connection's
// first line, as a PROXY-protocol listener does: gRPC reads the peer from the connection's
// RemoteAddr, so a test calls from any address through a real server and transport.
type peerListener struct{ net.Listener }

func (l peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := readLine(c)
		_ = c.SetReadDeadline(time.Time{})
		if err != nil {
			c.Close()
			continue
		}
		addr, err := net.ResolveTCPAddr("tcp", line)
		if err != nil {
			c.Close()
			continue
		}
		return peerConn{c, addr}, nil
	}
}

// readLine reads up to the first newline byte by byte, so that nothing after it is consumed.
func readLine(c net.Conn) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for len(b) < 100 {
		if _, err := io.ReadFull(c, one); err != nil {
			return "", err
		}
		if one[0] == '\n' {
			return string(b), nil
		}
		b = append(b, one[0])
	}
	return "", errors.New("peer line too long")
}

type peerConn struct {
	net.Conn
	remote net.Addr
}

func (c peerConn) RemoteAddr() net.Addr { return c.remote }

// reply is what a client got for one call.
type reply struct {
	err      error
	code     codes.Code
	msg      string
	header   metadata.MD
	trailer  metadata.MD
	retry    time.Duration // the RetryInfo detail's delay
	hasRetry bool
}

// retryInfo returns the RetryInfo detail of st.
func retryInfo(st *status.Status) (time.Duration, bool) {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

// call calls the method (Get, Health, Login) as a unary call, or with stream set as its
// streaming twin, with the metadata pairs md and the argument arg (the code the handler
// answers).
func call(t *testing.T, conn *grpc.ClientConn, method string, stream bool, arg string, md ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if len(md) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs(md...))
	}
	var r reply
	req := &healthpb.HealthCheckRequest{Service: arg}
	if !stream {
		r.err = conn.Invoke(ctx, "/"+service+"/"+method, req, new(healthpb.HealthCheckResponse),
			grpc.Header(&r.header), grpc.Trailer(&r.trailer))
	} else {
		r.err = callStream(ctx, conn, "/"+service+"/"+method+"Stream", req, &r)
	}
	st := status.Convert(r.err)
	r.code, r.msg = st.Code(), st.Message()
	r.retry, r.hasRetry = retryInfo(st)
	return r
}

// callStream calls a server-streaming method: one request, every response read.
func callStream(ctx context.Context, conn *grpc.ClientConn, method string, req any, r *reply) error {
	cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, method)
	if err != nil {
		return err
	}
	if err := cs.SendMsg(req); err != nil && err != io.EOF {
		return err
	}
	if err := cs.CloseSend(); err != nil {
		return err
	}
	for {
		err = cs.RecvMsg(new(healthpb.HealthCheckResponse))
		if err != nil {
			break
		}
	}
	r.header, _ = cs.Header()
	r.trailer = cs.Trailer()
	if err == io.EOF {
		return nil
	}
	return err
}

// modes are the two kinds of call every test makes.
var modes = []struct {
	name   string
	stream bool
}{{"unary", false}, {"stream", true}}

// interceptors returns the server options of a guard's interceptors.
func interceptors(g *ratelimit.Guard) []grpc.ServerOption {
	u, s := grpclimit.FromGuard(g)
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(u), grpc.ChainStreamInterceptor(s)}
}

// mustNew returns a limiter of the policies over store; it panics on an error.
func mustNew(store ratelimit.Store, policies ...ratelimit.Policy) *ratelimit.Limiter {
	l, err := ratelimit.New(store, policies...)
	if err != nil {
		panic(err)
	}
	return l
}

// mustGuard returns a guard of l; it panics on an error.
func mustGuard(l *ratelimit.Limiter, opts ...ratelimit.Option) *ratelimit.Guard {
	g, err := ratelimit.NewGuard(l, opts...)
	if err != nil {
		panic(err)
	}
	return g
}

func (r reply) String() string {
	return fmt.Sprintf("%v %q header %v trailer %v retry %v", r.code, r.msg, map[string][]string(r.header), map[string][]string(r.trailer), r.retry)
}
