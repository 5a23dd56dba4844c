// Package outagespec drives a scripted Redis outage through the net/http middleware, for the
// tests of the metrics modules: the shared standalone redis-server (internal/testing/redistest) is
// killed and restarted under requests to a fail-open route, a fail-closed one and one with a
// local fallback, and the requests counted by result must equal the responses by status.
// DeafCache drives an outage of a denial cache's subscription (deaf.go).
package outagespec

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// Run drives the outage with obs as the stores' observer; counted returns what obs has
// counted so far for a result label ("allowed", "unlimited", ...).
func Run(t *testing.T, obs *ratelimit.Observer, counted func(result string) float64) {
	t.Helper()
	clock := fakeclock.New(fakeclock.T0)
	client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { client.Close() })
	prefix := redistest.Prefix(t)
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithClock(clock), ratelimit.WithObserver(obs))
	withFallback := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix+"fb:"), ratelimit.WithClock(clock),
		ratelimit.WithObserver(obs), ratelimit.WithFallback(0.5))
	// Each identity sends 4 requests a round to each limiter: a limit of 5 leaves it a unit
	// after the first round, so that no denial is foretold (and answered by the denial cache)
	// when Redis goes down, and the outage's requests meet the fail modes.
	policy := ratelimit.Policy{Limit: 5, Window: time.Hour}
	l, err := ratelimit.New(store, policy)
	if err != nil {
		t.Fatal(err)
	}
	lf, err := ratelimit.New(withFallback, policy)
	if err != nil {
		t.Fatal(err)
	}
	quiet := ratelimit.WithErrorHandler(func(ratelimit.Request, error) {})
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	mux := http.NewServeMux()
	mux.Handle("/open", ratelimit.Middleware(l, quiet)(ok))
	mux.Handle("/closed", ratelimit.Middleware(l, quiet, ratelimit.WithResponse(ratelimit.Response{FailClosed: http.StatusServiceUnavailable}))(ok))
	mux.Handle("/fallback", ratelimit.Middleware(lf, quiet)(ok))
	mux.Handle("/fallback-closed", ratelimit.Middleware(lf, quiet, ratelimit.WithResponse(ratelimit.Response{FailClosed: http.StatusServiceUnavailable}))(ok))

	statuses := map[int]int{}
	round := func() {
		for i := range 16 {
			r := httptest.NewRequest(http.MethodGet, []string{"/open", "/closed", "/fallback", "/fallback-closed"}[i%4], nil)
			r.RemoteAddr = fmt.Sprintf("192.0.2.%d:1", i%2+1)
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, r)
			statuses[w.Code]++
		}
	}
	round() // Redis up: allowed
	redistest.Kill(t)
	round() // down: unlimited, error_denied, fallback_allowed and fallback_denied
	round()
	redistest.Restart(t)
	// The breaker's probe goes out once its wait has passed; keep asking until Redis decides.
	for i := 0; counted("denied")+counted("allowed") <= 16; i++ {
		if i == 1000 {
			t.Fatal("Redis never decided again after its restart")
		}
		clock.Advance(breakerCooldown)
		round()
	}
	round()

	results := map[string]float64{}
	total := 0.0
	for _, r := range observe.Results() {
		results[r.String()] = counted(r.String())
		total += results[r.String()]
	}
	for _, must := range []string{"allowed", "denied", "unlimited", "error_denied", "fallback_allowed", "fallback_denied"} {
		if results[must] == 0 {
			t.Errorf("no %s request in the scripted outage: %v", must, results)
		}
	}
	for status, want := range map[int]float64{
		http.StatusOK:                 results["allowed"] + results["unlimited"] + results["fallback_allowed"],
		http.StatusTooManyRequests:    results["denied"] + results["fallback_denied"],
		http.StatusServiceUnavailable: results["error_denied"],
	} {
		if float64(statuses[status]) != want {
			t.Errorf("%d responses %d, counted %v (results %v)", status, statuses[status], want, results)
		}
	}
	sent := 0
	for _, n := range statuses {
		sent += n
	}
	if total != float64(sent) {
		t.Errorf("counted %v requests, sent %d (responses %v)", total, sent, statuses)
	}
	t.Logf("responses %v; counted %v", statuses, results)
}

// breakerCooldown is the longest wait of the Redis store's default breaker between probes.
const breakerCooldown = 100 * time.Millisecond
