package grpclimit_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/grpc"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// holder is a handler that holds the calls whose argument is "hold" until release is closed,
// then answers OK; "hold-fail" is held the same and answers Aborted; "panic" panics.
type holder struct {
	started chan struct{}
	release chan struct{}
}

func newHolder() *holder {
	return &holder{started: make(chan struct{}, 4), release: make(chan struct{})}
}

func (h *holder) handle(ctx context.Context, arg string) error {
	switch arg {
	case "hold", "hold-fail":
		h.started <- struct{}{}
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
		if arg == "hold-fail" {
			return status.Error(codes.Aborted, "held, then failed")
		}
		return nil
	case "panic":
		panic("boom")
	}
	return replyCode(arg)
}

// A call under an in-flight policy holds its slot until its handler returns — a stream until
// it ends — and gives it back then, whatever the handler answered: with one slot, a call made
// while a stream (or a unary call) is held is refused with ResourceExhausted and a RetryInfo
// of a second at most, of unary and streaming calls alike; once the held call returns, the
// next is served.
func TestInFlightSlotHeldUntilTheCallEnds(t *testing.T) {
	for _, e := range engines {
		for _, held := range modes {
			for _, arg := range []string{"hold", "hold-fail"} {
				t.Run(e.name+"/"+held.name+"/"+arg, func(t *testing.T) {
					l := mustNew(e.store(t), ratelimit.Policy{Name: "calls", Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}})
					h := newHolder()
					srv := startServer(t, false, h.handle, interceptors(mustGuard(l))...)
					conn := srv.client(t, "", "")
					result := make(chan reply, 1)
					go func() { result <- call(t, conn, "Get", held.stream, arg) }()
					<-h.started
					for _, m := range modes {
						r := call(t, conn, "Get", m.stream, "")
						if r.code != codes.ResourceExhausted || r.retry != time.Second || r.header.Get("retry-after")[0] != "1" ||
							r.trailer.Get(grpclimit.PushbackKey)[0] != "1000" {
							t.Errorf("%s call while a %s call holds the slot: %v; want ResourceExhausted, RetryInfo 1s, retry-after 1, pushback 1000",
								m.name, held.name, r)
						}
					}
					close(h.release)
					want := codes.OK
					if arg == "hold-fail" {
						want = codes.Aborted
					}
					if r := <-result; r.code != want || r.header.Get("x-ratelimit-remaining")[0] != "0" {
						t.Errorf("the held %s call: %v, want %v with x-ratelimit-remaining 0", held.name, r, want)
					}
					for _, m := range modes {
						if r := call(t, conn, "Get", m.stream, ""); r.code != codes.OK {
							t.Errorf("%s call after the held call ended: %v, want OK (the slot came back)", m.name, r)
						}
					}
				})
			}
		}
	}
}

// A handler that panics behind a recovering interceptor gives its slot back all the same.
func TestInFlightSlotComesBackAfterAPanic(t *testing.T) {
	l := mustNew(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	u, s := grpclimit.FromGuard(mustGuard(l))
	recoverUnary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = status.Errorf(codes.Internal, "panic: %v", p)
			}
		}()
		return next(ctx, req)
	}
	recoverStream := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, next grpc.StreamHandler) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = status.Errorf(codes.Internal, "panic: %v", p)
			}
		}()
		return next(srv, ss)
	}
	srv := startServer(t, false, newHolder().handle,
		grpc.ChainUnaryInterceptor(recoverUnary, u), grpc.ChainStreamInterceptor(recoverStream, s))
	conn := srv.client(t, "", "")
	for _, m := range modes {
		for i := range 3 {
			if r := call(t, conn, "Get", m.stream, "panic"); r.code != codes.Internal {
				t.Fatalf("%s call %d: %v, want Internal (the panic): a slot that leaked would refuse it", m.name, i+1, r)
			}
		}
	}
}
