package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/examples/internal/exampletest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

func TestMain(m *testing.M) { os.Exit(exampletest.Main(m)) }

// burst is the example's short policy: what one client is admitted in a few seconds.
const burst = 5

// TestSharedLimitAcrossInstances builds the example, runs three instances of it sharing one
// Redis, and sends concurrent requests from one client across all three: the instances
// together admit exactly what the policy allows.
func TestSharedLimitAcrossInstances(t *testing.T) {
	bin := exampletest.Build(t)
	env := []string{"REDIS_URL=redis://" + redistest.Addr(t) + "/0", "RATELIMIT_PREFIX=" + redistest.Prefix(t)}
	var urls []string
	for range 3 {
		inst := exampletest.Start(t, bin, env...)
		if !strings.Contains(inst.Log(), "using the Redis store") {
			t.Fatalf("the instance does not say it uses Redis:\n%s", inst.Log())
		}
		urls = append(urls, inst.URL)
	}

	const perInstance = 20
	start := time.Now()
	codes := make(chan int, 3*perInstance)
	var wg sync.WaitGroup
	for i := range 3 * perInstance {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := exampletest.Do(t, http.MethodGet, urls[i%3]+"/items/"+fmt.Sprint(i))
			if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
				t.Errorf("a 429 without Retry-After: %v", resp.Header)
			}
			if resp.Header.Get("X-RateLimit-Limit") != fmt.Sprint(burst) {
				t.Errorf("got X-RateLimit-Limit %q, want %d", resp.Header.Get("X-RateLimit-Limit"), burst)
			}
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	if elapsed := time.Since(start); elapsed > 9*time.Second {
		t.Fatalf("the requests took %v, longer than the 10 s window the count relies on", elapsed)
	}
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[200] != burst || count[429] != 3*perInstance-burst {
		t.Errorf("got %v, want %d admitted and the other %d refused", count, burst, 3*perInstance-burst)
	}
}

// TestMemoryStore runs the example without Redis.
func TestMemoryStore(t *testing.T) {
	inst := exampletest.Start(t, exampletest.Build(t))
	if !strings.Contains(inst.Log(), "using the memory store") {
		t.Fatalf("the instance does not say it uses the memory store:\n%s", inst.Log())
	}
	// The handler reads the limiter's decision, and tells the remaining quota.
	resp, body := exampletest.Read(t, http.MethodGet, inst.URL+"/")
	exampletest.CheckDecision(t, resp, body)
	got := exampletest.Statuses(t, burst, http.MethodGet, inst.URL+"/")
	if want := "[200 200 200 200 429]"; fmt.Sprint(got) != want {
		t.Errorf("after the first request: got %v, want %s", got, want)
	}
	// The refusal as README's quick start shows it: the limit of 5, none left, and the wait
	// (at most the 10 s window; README shows 10).
	refused, _ := exampletest.Read(t, http.MethodGet, inst.URL+"/")
	retry, err := strconv.Atoi(refused.Header.Get("Retry-After"))
	if refused.StatusCode != http.StatusTooManyRequests || err != nil || retry < 1 || retry > 10 ||
		refused.Header.Get("X-Ratelimit-Limit") != "5" || refused.Header.Get("X-Ratelimit-Remaining") != "0" || refused.Header.Get("X-Ratelimit-Reset") == "" {
		t.Errorf("the refusal: %d %v; want 429, Retry-After 1-10 s, X-Ratelimit-Limit 5, X-Ratelimit-Remaining 0, X-Ratelimit-Reset", refused.StatusCode, refused.Header)
	}
}
