package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/examples/internal/exampletest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

func TestMain(m *testing.M) { os.Exit(exampletest.Main(m)) }

// TestRunsWithTheMemoryStore builds the command and runs it as a user would, with no flag but
// the rules file's path (the test runs in gateway/, the default is for examples/): it starts
// both services, keeps its limits in memory, proxies to each service with the X-RateLimit
// headers, streams a search, and refuses the 11th anonymous request with 429 and Retry-After.
func TestRunsWithTheMemoryStore(t *testing.T) {
	inst := exampletest.StartArgs(t, exampletest.Build(t), []string{"-rules", "gateway.yaml", "-stream-interval", "0s"})
	for _, want := range []string{"using the memory store", "service=orders", "service=search", `msg="ratelimit rules applied" version=1 rules=5`} {
		if !strings.Contains(inst.Log(), want) {
			t.Errorf("the log has no %q:\n%s", want, inst.Log())
		}
	}
	resp, body := exampletest.Read(t, http.MethodGet, inst.URL+"/orders/42", "X-API-Key", "key-globex-1")
	if got, want := limits(resp), fmt.Sprintf("200 limit=%d remaining=%d", freeQuota, freeQuota-1); got != want || !strings.Contains(body, `"tenant":"globex"`) {
		t.Errorf("GET /orders/42: %s %q; want %s from the orders service", got, body, want)
	}
	resp, body = exampletest.Read(t, http.MethodGet, inst.URL+"/search/stream?q=go", "X-API-Key", "key-globex-1")
	if resp.StatusCode != http.StatusOK || strings.Count(body, "data: result") != streamEvents {
		t.Errorf("the stream: %s %q; want 200 and %d events", limits(resp), body, streamEvents)
	}
	for i := range anonQuota {
		if resp := exampletest.Do(t, http.MethodGet, inst.URL+"/search/?q=go"); resp.StatusCode != http.StatusOK {
			t.Fatalf("anonymous request %d: %s; want 200", i+1, limits(resp))
		}
	}
	resp = exampletest.Do(t, http.MethodGet, inst.URL+"/orders/1")
	retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || err != nil || retry < 1 || retry > 60 || resp.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("anonymous request %d: %s; want 429, remaining 0, Retry-After 1-60 s", anonQuota+1, limits(resp))
	}
}

// TestRedisFlagSharesTheQuota runs two gateways with -redis over one Redis: a tenant's quota
// is one across them. The free quota is made 5 an hour, so that no request is given back
// while the test runs: five orders, spread over both and the tenant's two keys, count 4, 3, 2,
// 1, 0 left, and a search, sixth, is refused by the quota.
func TestRedisFlagSharesTheQuota(t *testing.T) {
	data, err := os.ReadFile("gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const free = "{name: tenant-per-minute, limit: 30, window: 1m}"
	if strings.Count(string(data), free) != 2 {
		t.Fatalf("gateway.yaml no longer has the free quota %s this test changes", free)
	}
	rules := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(rules, []byte(strings.ReplaceAll(string(data), free, "{name: tenant-per-minute, limit: 5, window: 1h}")), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := exampletest.Build(t)
	args := []string{"-rules", rules, "-redis", "redis://" + redistest.Addr(t) + "/0"}
	prefix := redistest.Prefix(t) // the instances' one prefix, no other test's
	var urls []string
	for range 2 {
		inst := exampletest.StartArgs(t, bin, args, "RATELIMIT_PREFIX="+prefix)
		if !strings.Contains(inst.Log(), "using the Redis store") {
			t.Fatalf("the instance does not say it uses Redis:\n%s", inst.Log())
		}
		urls = append(urls, inst.URL)
	}
	keys := []string{"key-globex-1", "key-globex-2"}
	for i := range 5 {
		resp := exampletest.Do(t, http.MethodGet, urls[i%2]+"/orders/1", "X-API-Key", keys[i/2%2])
		if got, want := limits(resp), fmt.Sprintf("200 limit=5 remaining=%d", 4-i); got != want {
			t.Errorf("request %d, to instance %d: %s; want %s", i+1, i%2+1, got, want)
		}
	}
	resp := exampletest.Do(t, http.MethodGet, urls[1]+"/search/?q=go", "X-API-Key", keys[0])
	if got := limits(resp); !strings.HasPrefix(got, "429 limit=5 remaining=0 retry-after=") {
		t.Errorf("the sixth request, a search on the second instance: %s; want 429 under the tenant's quota of 5", got)
	}
}
