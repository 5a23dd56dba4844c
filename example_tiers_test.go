package ratelimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// Give each API key the policies of its plan: 2 a minute on the free plan, 5 on the pro plan,
// 1 for a key of no known plan. The plans share the policy's name, so a client that upgrades
// keeps what it used.
func ExampleResolver_tiers() {
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(newExampleClock()))
	limiter, err := ratelimit.New(store, ratelimit.Policy{Name: "api", Limit: 1, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	plans := map[string]string{"k-free": "free", "k-pro": "pro"} // your customer database
	handler := ratelimit.Middleware(limiter,
		ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
		ratelimit.WithResolver(ratelimit.Resolver{Tier: func(r ratelimit.Request) string { return plans[r.Header("X-API-Key")] }, Tiers: map[string][]ratelimit.Policy{
			"free": {{Name: "api", Limit: 2, Window: time.Minute}},
			"pro":  {{Name: "api", Limit: 5, Window: time.Minute}},
		}}),
	)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))

	for _, key := range []string{"k-free", "k-pro", "k-unknown"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("X-API-Key", key)
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		fmt.Print(key, ": ")
		show(w)
	}
	// Output:
	// k-free: 200 Limit=2 Remaining=1
	// k-pro: 200 Limit=5 Remaining=4
	// k-unknown: 200 Limit=1 Remaining=0
}
