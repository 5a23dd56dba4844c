package grpclimit_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// A gRPC client chooses its call's deadline: a call that reported 30 tokens and then ran into
// it ends DeadlineExceeded, which is the client ending the call (told as 499, as Canceled), not
// a server error (504), which cost.Reported would charge nothing: a client that cuts each
// stream just before it ends does not get it free.
func TestChargeAfterClientDeadline(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			l := mustNew(ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0))), ratelimit.Policy{Limit: 100, Window: time.Minute})
			srv := startServer(t, false, func(ctx context.Context, arg string) error {
				cost.Report(ctx, 30) // the tokens sent before the client's deadline
				<-ctx.Done()         // the client's deadline
				return status.FromContextError(ctx.Err()).Err()
			}, interceptors(mustGuard(l, ratelimit.WithCost(func(ratelimit.Request) int64 { return 20 }), ratelimit.ChargeAfter(cost.Reported)))...)
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			req, conn := &healthpb.HealthCheckRequest{}, srv.client(t, "", "")
			var err error
			if m.stream {
				err = callStream(ctx, conn, "/"+service+"/GetStream", req, &reply{})
			} else {
				err = conn.Invoke(ctx, "/"+service+"/Get", req, new(healthpb.HealthCheckResponse))
			}
			if status.Code(err) != codes.DeadlineExceeded {
				t.Fatalf("the call ended %v, want DeadlineExceeded", err)
			}
			// The server's side of the call ends after the client's: its charge is made then.
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				d, err := l.AllowN(t.Context(), "ip:127.0.0.1", 0)
				if err != nil {
					t.Fatal(err)
				}
				if got := 100 - d.Remaining; got == 30 {
					break
				} else if time.Now().After(deadline) {
					t.Fatalf("charged %d for a call that reported 30 and ended at its client's deadline, want 30", got)
				}
			}
		})
	}
}

// A call whose handler ran out of a deadline of its own (a database's, a downstream call's),
// well inside its client's, ends DeadlineExceeded too: that is the server failing (504), which
// cost.Reported charges nothing, not the client ending the call (found by a review).
func TestChargeAfterServerTimeoutIsNotTheClients(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			l := mustNew(ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0))), ratelimit.Policy{Limit: 100, Window: time.Minute})
			srv := startServer(t, false, func(ctx context.Context, arg string) error {
				cost.Report(ctx, 30)
				down, cancel := context.WithTimeout(ctx, time.Millisecond) // the handler's own budget
				defer cancel()
				<-down.Done()
				return status.FromContextError(down.Err()).Err()
			}, interceptors(mustGuard(l, ratelimit.WithCost(func(ratelimit.Request) int64 { return 20 }), ratelimit.ChargeAfter(cost.Reported)))...)
			call(t, srv.client(t, "", ""), "Get", m.stream, "") // the client's deadline: 10 s
			d, err := l.AllowN(t.Context(), "ip:127.0.0.1", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := 100 - d.Remaining; got != 0 {
				t.Errorf("charged %d for a call that failed on the server's own deadline, want 0 (a server error)", got)
			}
		})
	}
}
