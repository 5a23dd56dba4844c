package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// Our office network is never limited and an abusive range is refused outright, neither
// asking the store; everyone else gets 2 requests a minute.
func ExampleWithAccess() {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newExampleClock()))
	limiter, err := ratelimit.New(store, ratelimit.Policy{Limit: 2, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	handler := ratelimit.Middleware(limiter, ratelimit.WithAccess(ratelimit.Access{
		Allow: []string{"10.0.0.0/8"},     // the office
		Deny:  []string{"203.0.113.0/24"}, // an abusive range
	}))(hello)

	for _, from := range []string{"10.1.2.3", "10.1.2.3", "10.1.2.3", "203.0.113.9", "192.0.2.1", "192.0.2.1", "192.0.2.1"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = from + ":4000"
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		printResponse(from, w)
	}
	// Output:
	// 10.1.2.3     200
	// 10.1.2.3     200
	// 10.1.2.3     200
	// 203.0.113.9  403
	// 192.0.2.1    200 remaining=1
	// 192.0.2.1    200 remaining=0
	// 192.0.2.1    429 remaining=0
}
