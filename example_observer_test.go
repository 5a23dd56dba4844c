package ratelimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// Count the requests a guard refused, with an Observer of one hook: the others are nil, and
// are not called. (The modules ratelimit/prometheus and ratelimit/otel set every hook:
// ratelimit.WithObserver(metrics.Hooks()).)
func ExampleObserver() {
	var denied atomic.Int64
	obs := &ratelimit.Observer{
		Answered: func(e observe.RequestEvent) {
			if e.Result == observe.ResultDenied {
				denied.Add(1)
			}
		},
	}
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(ratelimit.WithObserver(obs)),
		ratelimit.Policy{Limit: 2, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	h := ratelimit.Middleware(limiter)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for range 5 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}
	fmt.Println("denied:", denied.Load())
	// Output: denied: 3
}
