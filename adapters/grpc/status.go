package grpclimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// PushbackKey is the trailer of gRFC A6 (retries) by which the server tells a client's retry
// policy when to try again, in milliseconds; a negative value tells it not to retry.
const PushbackKey = "grpc-retry-pushback-ms"

// headerKeys are the lower-case metadata keys of the fields [ratelimit.Outcome.Headers] names.
// Content-Type and X-Content-Type-Options, which describe an HTTP body, have none: a refused
// call has no body, and content-type is gRPC's own.
var headerKeys = map[string]string{
	"X-RateLimit-Limit":      "x-ratelimit-limit",
	"X-RateLimit-Remaining":  "x-ratelimit-remaining",
	"X-RateLimit-Reset":      "x-ratelimit-reset",
	"RateLimit-Policy":       "ratelimit-policy",
	"RateLimit":              "ratelimit",
	"Retry-After":            "retry-after",
	"X-RateLimit-Shadow":     "x-ratelimit-shadow",
	"Content-Type":           "",
	"X-Content-Type-Options": "",
}

// headers returns the outcome's rate-limit fields as header metadata, and the Retry-After
// seconds ("" when there are none); nil when there are no fields (the call was skipped, or
// the store failed and the call failed open).
func headers(o *ratelimit.Outcome) (md metadata.MD, retryAfter string) {
	var (
		vals *[8]string // one array for every value: each key's is a slice of one
		n    int
	)
	o.Headers(func(name, value string) {
		key, known := headerKeys[name]
		if !known {
			key = strings.ToLower(name) // a field of a later release
		}
		if key == "" {
			return
		}
		if md == nil {
			md, vals = make(metadata.MD, 4), new([8]string)
		}
		if n < len(vals) {
			vals[n] = value
			md[key] = vals[n : n+1 : n+1]
			n++
		} else {
			md[key] = []string{value}
		}
		if key == "retry-after" {
			retryAfter = value
		}
	})
	return md, retryAfter
}

// refusal returns the status of a call the guard refused (see the package documentation for
// the codes) and the trailer that goes with it: [PushbackKey] when the client may retry after
// a delay, or must not retry.
func refusal(o *ratelimit.Outcome, retryAfter string) (*status.Status, metadata.MD) {
	c := refusalCode(o)
	msg := strings.TrimSuffix(string(o.Body), "\n")
	if msg == "" {
		if msg = http.StatusText(o.Status); msg == "" {
			msg = c.String()
		}
	}
	st := status.New(c, msg)
	delay, ok := retryDelay(o, retryAfter)
	switch {
	case ok:
		if withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)}); err == nil {
			st = withInfo
		}
		return st, metadata.MD{PushbackKey: []string{strconv.FormatInt(delay.Milliseconds(), 10)}}
	case denied(o) && o.Decision.RetryAfter == algorithms.Never:
		// The call costs more than a policy holds: no wait will do.
		return st, metadata.MD{PushbackKey: []string{"-1"}}
	}
	return st, nil
}

// denied reports whether the limiter denied the call, rather than the guard refusing it for
// another reason (no key, a bad key or cost, a failed store, a client gone).
func denied(o *ratelimit.Outcome) bool {
	return o.Result == observe.ResultDenied || o.Result == observe.ResultFallbackDenied
}

// refusalCode is the code of a refused call: ResourceExhausted for every denial of the
// limiter, whatever the HTTP status the guard would answer; for other refusals the code of
// the guard's status.
func refusalCode(o *ratelimit.Outcome) codes.Code {
	if denied(o) {
		return codes.ResourceExhausted
	}
	switch s := o.Status; {
	case s == http.StatusBadRequest:
		return codes.InvalidArgument
	case s == http.StatusUnauthorized:
		return codes.Unauthenticated
	case s == http.StatusForbidden:
		return codes.PermissionDenied
	case s == http.StatusNotFound:
		return codes.NotFound
	case s == http.StatusConflict:
		return codes.Aborted
	case s == http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case s == statusClientClosed:
		return codes.Canceled
	case s == http.StatusNotImplemented:
		return codes.Unimplemented
	case s == http.StatusServiceUnavailable:
		return codes.Unavailable
	case s == http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	case s >= 400 && s < 500:
		return codes.InvalidArgument
	}
	return codes.Unknown
}

// statusClientClosed is the guard's status for a call whose client went away while it waited
// (nginx's 499).
const statusClientClosed = 499

// retryDelay returns how long the client should wait before it tries again: the limiter's
// exact wait, rounded up to the millisecond, but never longer than the Retry-After an HTTP
// client gets (retryAfter, whole seconds), which is shorter than the wait for a slot of an
// in-flight policy (a slot comes back whenever a call ends). It reports false when the
// outcome has no Retry-After.
func retryDelay(o *ratelimit.Outcome, retryAfter string) (time.Duration, bool) {
	secs, err := strconv.ParseInt(retryAfter, 10, 64)
	if err != nil || secs <= 0 {
		return 0, false
	}
	delay := time.Duration(secs) * time.Second
	if wait := o.Decision.RetryAfter; denied(o) && wait > 0 {
		delay = min(delay, (wait + time.Millisecond - 1).Truncate(time.Millisecond))
	}
	return delay, true
}

// HTTPStatus returns the HTTP status of a call that ended with code c, the mapping of
// google.rpc.Code: OK 200, Canceled 499, InvalidArgument, FailedPrecondition and OutOfRange
// 400, Unauthenticated 401, PermissionDenied 403, NotFound 404, AlreadyExists and Aborted 409,
// ResourceExhausted 429, Unimplemented 501, Unavailable 503, DeadlineExceeded 504, and 500 for
// the rest (Unknown, Internal, DataLoss). It is the status the interceptors give
// [ratelimit.Guard.Done] (but DeadlineExceeded, when the client set the call's deadline: 499,
// as Canceled), so it is what a [ratelimit.CountIf] function sees:
//
//	ratelimit.CountIf(func(s int) bool { return s == grpclimit.HTTPStatus(codes.Unauthenticated) })
func HTTPStatus(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.Canceled:
		return statusClientClosed
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound:
		return http.StatusNotFound
	case codes.AlreadyExists, codes.Aborted:
		return http.StatusConflict
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// codeOf returns the code a gRPC server answers for a handler's error: the error's status, a
// context's error as its code, else Unknown.
func codeOf(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return status.FromContextError(err).Code()
}
