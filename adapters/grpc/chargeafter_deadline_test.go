package grpclimit_test

import (
	"context"
	"testing"
	"time"

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
				return replyCode("DeadlineExceeded")
			}, interceptors(mustGuard(l, ratelimit.WithCost(func(ratelimit.Request) int64 { return 20 }), ratelimit.ChargeAfter(cost.Reported)))...)
			call(t, srv.client(t, "", ""), "Get", m.stream, "")
			d, err := l.AllowN(t.Context(), "ip:127.0.0.1", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := 100 - d.Remaining; got != 30 {
				t.Errorf("charged %d for a call that reported 30 and ended at its client's deadline, want 30", got)
			}
		})
	}
}
