package grpclimit

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// Every code has the HTTP status of google.rpc.Code's mapping, and codeOf reads a handler's
// error as the server answers it.
func TestHTTPStatus(t *testing.T) {
	want := map[codes.Code]int{
		codes.OK: 200, codes.Canceled: 499, codes.Unknown: 500, codes.InvalidArgument: 400,
		codes.DeadlineExceeded: 504, codes.NotFound: 404, codes.AlreadyExists: 409,
		codes.PermissionDenied: 403, codes.ResourceExhausted: 429, codes.FailedPrecondition: 400,
		codes.Aborted: 409, codes.OutOfRange: 400, codes.Unimplemented: 501, codes.Internal: 500,
		codes.Unavailable: 503, codes.DataLoss: 500, codes.Unauthenticated: 401, codes.Code(99): 500,
	}
	for c, s := range want {
		if got := HTTPStatus(c); got != s {
			t.Errorf("HTTPStatus(%v) = %d, want %d", c, got, s)
		}
	}
}

// The code of each refusal the guard can make.
func TestRefusalCode(t *testing.T) {
	for _, tc := range []struct {
		o    ratelimit.Outcome
		want codes.Code
	}{
		{ratelimit.Outcome{Status: 429, Result: observe.ResultDenied}, codes.ResourceExhausted},
		{ratelimit.Outcome{Status: 503, Result: observe.ResultDenied}, codes.ResourceExhausted}, // Response.InFlightStatus, Response.Deny
		{ratelimit.Outcome{Status: 418, Result: observe.ResultFallbackDenied}, codes.ResourceExhausted},
		{ratelimit.Outcome{Status: 503, Result: observe.ResultErrorDenied}, codes.Unavailable},
		{ratelimit.Outcome{Status: 429, Result: observe.ResultErrorDenied}, codes.ResourceExhausted},
		{ratelimit.Outcome{Status: 400, Result: observe.ResultRejected}, codes.InvalidArgument},
		{ratelimit.Outcome{Status: 401, Result: observe.ResultRejected}, codes.Unauthenticated},
		{ratelimit.Outcome{Status: 403, Result: observe.ResultRejected}, codes.PermissionDenied},
		{ratelimit.Outcome{Status: 404, Result: observe.ResultRejected}, codes.NotFound},
		{ratelimit.Outcome{Status: 409, Result: observe.ResultRejected}, codes.Aborted},
		{ratelimit.Outcome{Status: 418, Result: observe.ResultRejected}, codes.InvalidArgument},
		{ratelimit.Outcome{Status: 499, Result: observe.ResultCanceled}, codes.Canceled},
		{ratelimit.Outcome{Status: 501}, codes.Unimplemented},
		{ratelimit.Outcome{Status: 504}, codes.DeadlineExceeded},
		{ratelimit.Outcome{Status: 500}, codes.Unknown},
	} {
		if got := refusalCode(&tc.o); got != tc.want {
			t.Errorf("status %d, result %v: %v, want %v", tc.o.Status, tc.o.Result, got, tc.want)
		}
	}
}
