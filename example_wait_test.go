package ratelimit_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// A worker calls a third-party API limited to 20 requests a second across the fleet: Wait
// blocks until it is the worker's turn in the shared quota (with a Redis store, every
// instance's workers share it), so the API never sees more than its limit. The sliding log
// counts as the partner does: at most 20 in any second, wherever it starts.
func ExampleLimiter_Wait() {
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), // NewRedisStore(rdb) in production
		ratelimit.Policy{Name: "partner-api", Limit: 20, Window: time.Second, Algorithm: algorithms.SlidingLog{}})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sent := 0
	for range 25 { // 20 at once, the next 5 a second later: never 21 in one second
		if _, err := limiter.Wait(ctx, "partner-api"); err != nil {
			fmt.Println("gave up:", err)
			return
		}
		sent++ // call the API here
	}
	fmt.Println("calls sent:", sent)
	// Output: calls sent: 25
}

// An http.Client whose requests take their turns: a Transport limits each host (by default)
// and holds a host back when it answers 429 with Retry-After.
func ExampleTransport() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	limiter, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 2, Window: time.Hour})
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: &ratelimit.Transport{Limiter: limiter}}
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println("not sent: its turn comes after its deadline")
		} else {
			fmt.Println(resp.Status)
			resp.Body.Close()
		}
		cancel()
	}
	// Output:
	// 200 OK
	// 200 OK
	// not sent: its turn comes after its deadline
}
