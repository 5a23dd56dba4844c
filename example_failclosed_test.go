package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// unreachableStore is a Store whose every call fails, as a Redis store does while Redis
// refuses connections.
type unreachableStore struct{}

var _ ratelimit.Store = unreachableStore{}

// errRefused is the error of a store that cannot reach its server. A store names the kind of
// its failures with a method ErrorKind, returning one of observe.ErrorKinds(); an error of no
// kind is "other".
var errRefused error = refused{}

type refused struct{}

func (refused) Error() string     { return "dial tcp 10.0.0.5:6379: connection refused" }
func (refused) ErrorKind() string { return "unavailable" }

func (unreachableStore) Check(ctx context.Context, key string, policies []ratelimit.Policy, cost int64, charge bool, out []ratelimit.PolicyResult) (time.Time, error) {
	return time.Time{}, errRefused
}

func (unreachableStore) Refund(ctx context.Context, key string, policies []ratelimit.Policy, cost int64, at time.Time) error {
	return errRefused
}

func (unreachableStore) Reset(ctx context.Context, key string, policies []ratelimit.Policy) error {
	return errRefused
}

// When the store fails, a guard fails open by default: the request goes through, undecided,
// and the error is reported. Fail closed where an unlimited request costs more than a refused
// one, such as a login.
func ExampleResponse_failClosed() {
	limiter, err := ratelimit.New(unreachableStore{}, ratelimit.Policy{Limit: 5, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	report := ratelimit.WithErrorHandler(func(r ratelimit.Request, err error) {
		fmt.Println("  reported:", err)
		fmt.Println("  store unavailable:", observe.ErrorKind(err) == "unavailable",
			"timeout:", observe.ErrorKind(err) == "timeout")
	})
	handler := func(w http.ResponseWriter, r *http.Request) {
		_, decided := ratelimit.DecisionFrom(r.Context())
		fmt.Println("  handler runs; decided:", decided)
		fmt.Fprintln(w, "ok")
	}
	mux := http.NewServeMux()
	mux.Handle("GET /items", ratelimit.Middleware(limiter, report)(http.HandlerFunc(handler)))
	mux.Handle("POST /login", ratelimit.Middleware(limiter, report,
		ratelimit.WithResponse(ratelimit.Response{FailClosed: http.StatusServiceUnavailable}))(http.HandlerFunc(handler)))

	for _, r := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "/items", nil),
		httptest.NewRequest(http.MethodPost, "/login", nil),
	} {
		fmt.Println(r.Method, r.URL.Path)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		fmt.Printf("  answered %d, Retry-After %q, %q\n", w.Code, w.Header().Get("Retry-After"), strings.TrimSpace(w.Body.String()))
	}
	// Output:
	// GET /items
	//   reported: ratelimit: store: unavailable: dial tcp 10.0.0.5:6379: connection refused
	//   store unavailable: true timeout: false
	//   handler runs; decided: false
	//   answered 200, Retry-After "", "ok"
	// POST /login
	//   reported: ratelimit: store: unavailable: dial tcp 10.0.0.5:6379: connection refused
	//   store unavailable: true timeout: false
	//   answered 503, Retry-After "1", "Service Unavailable: the service is temporarily unavailable. Retry in 1 second."
}
