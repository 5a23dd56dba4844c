package grpclimit_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/cost"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// A call charged after it ends (ratelimit.ChargeAfter), unary and streaming alike: it holds its
// estimate of 20 while it runs, then is charged what its handler reported through its context,
// the bytes of the messages it sent, or nothing for a server error.
func TestChargeAfter(t *testing.T) {
	for _, m := range modes {
		for _, c := range []struct {
			name   string
			charge func(cost.After) int64
			arg    string // the code the handler answers
			report int64
			want   int64 // charged
		}{
			{"reported", cost.Reported, "", 30, 30},
			{"the bytes sent", cost.Written, "", 30, 2}, // HealthCheckResponse{Status: SERVING}: 2 bytes
			{"a server error", cost.Reported, "Internal", 30, 0},
			{"a client error", cost.Reported, "NotFound", 30, 30},
		} {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				// On a clock of the test's: no token comes back while the call runs.
				l := mustNew(ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0))), ratelimit.Policy{Limit: 100, Window: time.Minute})
				held := int64(-1)
				srv := startServer(t, false, func(ctx context.Context, arg string) error {
					d, _ := l.AllowN(ctx, "ip:127.0.0.1", 0) // charges nothing
					held = d.Remaining
					if !cost.Report(ctx, c.report) {
						t.Error("the handler's context carries no meter")
					}
					return replyCode(arg)
				}, interceptors(mustGuard(l, ratelimit.WithCost(func(ratelimit.Request) int64 { return 20 }), ratelimit.ChargeAfter(c.charge)))...)
				r := call(t, srv.client(t, "", ""), "Get", m.stream, c.arg)
				if want := codeNamed(c.arg); r.code != want {
					t.Fatalf("code %v, want %v", r.code, want)
				}
				if held != 80 {
					t.Errorf("%d remaining while the call ran, want 80: its estimate held", held)
				}
				d, err := l.AllowN(t.Context(), "ip:127.0.0.1", 0)
				if err != nil {
					t.Fatal(err)
				}
				if got := 100 - d.Remaining; got != c.want {
					t.Errorf("charged %d, want %d", got, c.want)
				}
			})
		}
	}
}

// codeNamed returns the code the handler answers for arg.
func codeNamed(arg string) codes.Code {
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if c.String() == arg {
			return c
		}
	}
	return codes.OK
}
