package grpclimit_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/adapters/grpc"
)

// statusCode returns the code of err.
func statusCode(err error) codes.Code { return status.Code(err) }

// The handler of a unary call (ctx) and of a stream (ss.Context()) finds the decision with
// Decision when the limiter decided, and none when the call was skipped or failed open.
// ratelimit.DecisionFrom, which reads the net/http middleware's, finds none.
func TestDecision(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			var fromCore bool
			handle := func(ctx context.Context, _ string) error {
				_, fromCore = ratelimit.DecisionFrom(ctx)
				return nil
			}
			policy := ratelimit.Policy{Name: "api", Limit: 10, Window: time.Minute}
			for _, tc := range []struct {
				name  string
				store ratelimit.Store
				opts  []ratelimit.Option
				want  bool
			}{
				{"decided", ratelimit.NewMemoryStore(), nil, true},
				{"skipped", ratelimit.NewMemoryStore(), []ratelimit.Option{ratelimit.WithAccess(ratelimit.Access{Skip: func(ratelimit.Request) bool { return true }})}, false},
				{"failed open", brokenStore{}, []ratelimit.Option{ratelimit.WithErrorHandler(func(ratelimit.Request, error) {})}, false},
			} {
				srv := startServer(t, false, handle, interceptors(mustGuard(mustNew(tc.store, policy), tc.opts...))...)
				r := call(t, srv.client(t, "", ""), "Get", m.stream, "")
				d := srv.lastDecision()
				if r.code != codes.OK || d.ok != tc.want {
					t.Errorf("%s: %v, Decision found: %v, want %v", tc.name, r, d.ok, tc.want)
				}
				if tc.want && (d.d.Remaining != 9 || d.d.Limit != 10 || d.d.Policy.Name != "api" || !d.d.Allowed) {
					t.Errorf("%s: the decision %+v, want 9 of 10 left under api", tc.name, d.d)
				}
				if fromCore {
					t.Errorf("%s: ratelimit.DecisionFrom found a decision", tc.name)
				}
			}
		})
	}
	if _, ok := grpclimit.Decision(context.Background()); ok {
		t.Error("a context without a decision has one")
	}
}
