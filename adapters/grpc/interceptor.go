package grpclimit

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
)

// UnaryServerInterceptor returns a unary server interceptor that limits calls with l,
// configured by opts. It panics if an option is invalid, when the server is being set up;
// [FromGuard] with [ratelimit.NewGuard] returns the error instead. It never panics on a call.
func UnaryServerInterceptor(l *ratelimit.Limiter, opts ...ratelimit.Option) grpc.UnaryServerInterceptor {
	return unary(mustGuard(l, opts))
}

// StreamServerInterceptor returns a stream server interceptor that limits calls with l,
// configured by opts: a stream is checked once, when it starts. It panics if an option is
// invalid, as [UnaryServerInterceptor] does.
//
// Two interceptors made from the same limiter share their quotas, which live in the limiter's
// store: a client's unary and streaming calls draw on one quota. [FromGuard] makes both from
// one guard.
func StreamServerInterceptor(l *ratelimit.Limiter, opts ...ratelimit.Option) grpc.StreamServerInterceptor {
	return stream(mustGuard(l, opts))
}

// FromGuard returns the unary and the stream server interceptors that limit calls with g: a
// guard made by [ratelimit.NewGuard] or [ratelimit.Switch], or one that a rules engine keeps
// up to date. Both check every call with g, so they share its configuration and its quotas:
//
//	unary, stream := grpclimit.FromGuard(g)
//	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream))
func FromGuard(g *ratelimit.Guard) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	return unary(g), stream(g)
}

// mustGuard returns the guard of l and opts; it panics if an option is invalid.
func mustGuard(l *ratelimit.Limiter, opts []ratelimit.Option) *ratelimit.Guard {
	g, err := ratelimit.NewGuard(l, opts...)
	if err != nil {
		panic(err)
	}
	return g
}

// fullMethod returns the full method m of a call with its leading slash. A call's :path is
// its full method, and gRPC before v1.79.3 serves one written without the slash
// ("pkg.Service/Method") as the method itself, handing a stream interceptor the path as it
// came: keyed as written, one method would have two routes, and two quotas.
func fullMethod(m string) string {
	if !strings.HasPrefix(m, "/") {
		return "/" + m
	}
	return m
}

// unary returns the unary interceptor of g.
func unary(g *ratelimit.Guard) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		o := g.Check(&request{ctx: ctx, method: fullMethod(info.FullMethod)})
		md, retryAfter := headers(&o)
		if md != nil {
			_ = grpc.SetHeader(ctx, md) // fails only outside a gRPC server: nothing to send then
		}
		if !o.Proceed {
			st, trailer := refusal(&o, retryAfter)
			if trailer != nil {
				_ = grpc.SetTrailer(ctx, trailer)
			}
			return nil, st.Err()
		}
		dc := &decisionContext{Context: ctx, o: o}
		op := &dc.o // the outcome the handler's context carries: a guard inside takes its report
		defer done(g, op)
		if !op.Pending {
			return handler(dc, req)
		}
		if op.Meter == nil {
			resp, err := handler(dc, req)
			g.Done(op, doneStatus(ctx, err))
			return resp, err
		}
		// ChargeAfter: the handler reports its cost through its context; the reply's bytes count.
		resp, err := handler(cost.NewContext(dc, op.Meter), req)
		if err == nil {
			op.Meter.Wrote(sizeOf(resp))
		}
		g.Done(op, doneStatus(ctx, err))
		return resp, err
	}
}

// stream returns the stream interceptor of g. The call is checked when the stream starts,
// and completed ([ratelimit.Guard.Done]) when the handler returns: an in-flight slot is held
// for as long as the stream lasts.
func stream(g *ratelimit.Guard) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx := ss.Context()
		o := g.Check(&request{ctx: ctx, method: fullMethod(info.FullMethod)})
		md, retryAfter := headers(&o)
		if md != nil {
			_ = ss.SetHeader(md) // fails only once headers were sent, which nothing did yet
		}
		if !o.Proceed {
			st, trailer := refusal(&o, retryAfter)
			if trailer != nil {
				ss.SetTrailer(trailer)
			}
			return st.Err()
		}
		dc := &decisionContext{Context: ctx, o: o}
		op := &dc.o
		defer done(g, op)
		if op.Meter != nil { // ChargeAfter: reports through the stream's context, the messages' bytes
			ss = &meteredStream{decidedStream{ServerStream: ss, ctx: cost.NewContext(dc, op.Meter)}, op.Meter}
		} else {
			ss = &decidedStream{ServerStream: ss, ctx: dc}
		}
		if !op.Pending {
			return handler(srv, ss)
		}
		err := handler(srv, ss)
		g.Done(op, doneStatus(ctx, err))
		return err
	}
}

// doneStatus returns the status the interceptors tell the guard of a call that ended with err
// on the incoming context ctx: its HTTPStatus — but a DeadlineExceeded of a call whose
// client's deadline has passed is the client ending it, 499 as Canceled is, not a server's
// 504: a client that chooses its deadline to cut each call short does not get it as a server
// error, which ChargeAfter's usual charges (cost.Reported, cost.Written) charge nothing. A
// DeadlineExceeded before the client's deadline (the handler's own budget ran out, or a
// timeout interceptor's) is the server's: 504.
func doneStatus(ctx context.Context, err error) int {
	c := codeOf(err)
	if _, set := ctx.Deadline(); set && c == codes.DeadlineExceeded && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		c = codes.Canceled
	}
	return HTTPStatus(c)
}

// done completes an outcome after its handler returned: the handler panicked (a recovering
// interceptor in front of this one may keep the server up), and its slots come back all the
// same; or the outcome waits for no status, and its report is told. After the interceptor's own
// Done, it does nothing.
func done(g *ratelimit.Guard, o *ratelimit.Outcome) {
	g.Done(o, http.StatusInternalServerError)
}

// decidedStream is a stream whose context carries the limiter's decision.
type decidedStream struct {
	grpc.ServerStream
	ctx context.Context
}

// Context returns the stream's context, with the decision (see [Decision]).
func (s *decidedStream) Context() context.Context { return s.ctx }

// meteredStream is the stream of a call charged after it ends (ratelimit.ChargeAfter): it
// counts the bytes of the messages sent. A stream its client left is charged what was sent.
type meteredStream struct {
	decidedStream
	meter *cost.Meter
}

// SendMsg sends m, and counts its bytes once sent.
func (s *meteredStream) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	if err == nil {
		s.meter.Wrote(sizeOf(m))
	}
	return err
}

// sizeOf returns the bytes of a message in the wire format: of a protocol buffer, its encoded
// size; of anything else (a message of another codec), 0.
func sizeOf(m any) int64 {
	if pm, ok := m.(proto.Message); ok {
		return int64(proto.Size(pm))
	}
	return 0
}
