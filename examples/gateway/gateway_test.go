package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// The limits of gateway.yaml the tests count on.
const (
	freeQuota   = 30 // tenant-per-minute, free plan
	freeSearch  = 2  // search-per-second, free plan
	anonQuota   = 10 // ip-per-minute
	freeEmitted = 2  // seconds per request given back by the free quota: 30 a minute
)

// testGateway is the gateway in-process, on a memory store whose clock the test moves, with
// its rules in a copy of gateway.yaml that the test may edit.
type testGateway struct {
	*gateway
	url   string
	clock *fakeclock.Clock
	rules string        // the path of the rules file
	gate  chan struct{} // a search stream sends its next event when the test sends here
}

// startGateway starts the gateway with cfg's fields that the test sets (trustProxies) and the
// others the test's own.
func startGateway(t *testing.T, cfg config) *testGateway {
	t.Helper()
	original, err := os.ReadFile("gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tg := &testGateway{clock: fakeclock.New(fakeclock.T0), rules: filepath.Join(t.TempDir(), "gateway.yaml"), gate: make(chan struct{})}
	if err := os.WriteFile(tg.rules, original, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.store = ratelimit.NewMemoryStore(ratelimit.WithClock(tg.clock))
	cfg.rulesPath = tg.rules
	cfg.keyHeader = "X-API-Key"
	cfg.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.pause = func(ctx context.Context) error {
		select {
		case <-tg.gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	g, err := newGateway(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.handler)
	t.Cleanup(func() { srv.Close(); g.close() })
	tg.gateway, tg.url = g, srv.URL
	return tg
}

// get sends GET path with the header name, value pairs given, and returns the response, its
// body read.
func (tg *testGateway) get(t *testing.T, path string, header ...string) (*http.Response, string) {
	t.Helper()
	return send(t, http.MethodGet, tg.url+path, header...)
}

func send(t *testing.T, method, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

// limits returns a response's status and X-RateLimit-Limit, X-RateLimit-Remaining and
// Retry-After, in one string to compare.
func limits(resp *http.Response) string {
	s := fmt.Sprintf("%d limit=%s remaining=%s", resp.StatusCode, resp.Header.Get("X-RateLimit-Limit"), resp.Header.Get("X-RateLimit-Remaining"))
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		s += " retry-after=" + ra
	}
	return s
}

// A tenant's quota is one across both services and all its keys: the free tenant globex is
// admitted 30 requests a minute, orders and searches together, through either of its two
// keys; the 31st is refused on both services, through both keys, with 429, Retry-After and
// the X-RateLimit headers, while tenant acme is not affected; after Retry-After (on the
// fake clock) globex is admitted again.
func TestTenantQuotaAcrossServicesAndKeys(t *testing.T) {
	tg := startGateway(t, config{})
	keys := []string{"key-globex-1", "key-globex-2"}
	for i := range freeQuota {
		path := fmt.Sprintf("/orders/%d", i)
		if i < freeSearch { // within the search route's own limit
			path = "/search/?q=go"
		}
		resp, body := tg.get(t, path, "X-API-Key", keys[i%2])
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-RateLimit-Remaining") == "" || !strings.Contains(body, "globex") {
			t.Fatalf("request %d, %s: %s %q; want 200 for globex with X-RateLimit-Remaining", i+1, path, limits(resp), body)
		}
	}
	for _, key := range keys {
		for _, path := range []string{"/orders/1", "/search/stream?q=go"} {
			resp, _ := tg.get(t, path, "X-API-Key", key)
			if got, want := limits(resp), fmt.Sprintf("429 limit=%d remaining=0 retry-after=%d", freeQuota, freeEmitted); got != want {
				t.Errorf("%s with %s, over the quota: %s; want %s", path, key, got, want)
			}
			if resp.Header.Get("X-RateLimit-Reset") == "" {
				t.Errorf("%s with %s: a 429 without X-RateLimit-Reset: %v", path, key, resp.Header)
			}
		}
	}
	if resp, body := tg.get(t, "/orders/1", "X-API-Key", "key-acme-1"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"tenant":"acme"`) {
		t.Errorf("tenant acme, under its own quota: %s %q; want 200", limits(resp), body)
	}
	tg.clock.Advance(freeEmitted * time.Second)
	if resp, _ := tg.get(t, "/orders/1", "X-API-Key", keys[0]); limits(resp) != fmt.Sprintf("200 limit=%d remaining=0", freeQuota) {
		t.Errorf("after Retry-After: %s; want 200, the one request given back used", limits(resp))
	}
}

// The search route has its own limit per second on top of the tenant's quota: the third
// search within a second is refused by it (its limit in the headers, Retry-After 1) while the
// orders service still admits the tenant, and a refused search does not use the tenant's
// quota; a second later searching is admitted again.
func TestSearchRouteLimit(t *testing.T) {
	tg := startGateway(t, config{})
	for i := range freeSearch {
		if resp, _ := tg.get(t, "/search/?q=go", "X-API-Key", "key-globex-1"); limits(resp) != fmt.Sprintf("200 limit=%d remaining=%d", freeSearch, freeSearch-1-i) {
			t.Fatalf("search %d: %s; want 200 under the search limit", i+1, limits(resp))
		}
	}
	resp, _ := tg.get(t, "/search/?q=go", "X-API-Key", "key-globex-1")
	if got, want := limits(resp), fmt.Sprintf("429 limit=%d remaining=0 retry-after=1", freeSearch); got != want {
		t.Errorf("search %d within a second: %s; want %s", freeSearch+1, got, want)
	}
	// Two searches charged, the refused one not, and this request: 30 - 3 left.
	resp, _ = tg.get(t, "/orders/7", "X-API-Key", "key-globex-1")
	if got, want := limits(resp), fmt.Sprintf("200 limit=%d remaining=%d", freeQuota, freeQuota-freeSearch-1); got != want {
		t.Errorf("orders after the refused search: %s; want %s", got, want)
	}
	tg.clock.Advance(time.Second)
	if resp, _ := tg.get(t, "/search/?q=go", "X-API-Key", "key-globex-1"); resp.StatusCode != http.StatusOK {
		t.Errorf("a search a second later: %s; want 200", limits(resp))
	}
}

// An upstream's errors are not charged: more failed requests (503 from the orders service)
// than the quota holds are all passed on, none refused, and the quota is whole after them;
// so is it after the proxy's 502s once the service is down. A 4xx of the service is the
// client's, and is charged.
func TestUpstreamErrorsNotCharged(t *testing.T) {
	tg := startGateway(t, config{})
	for i := range freeQuota + 10 {
		resp, body := tg.get(t, "/orders/fail", "X-API-Key", "key-globex-1")
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "database is unavailable") {
			t.Fatalf("failing request %d: %s %q; want the service's 503, passed on", i+1, limits(resp), body)
		}
	}
	resp, _ := tg.get(t, "/orders/1", "X-API-Key", "key-globex-1")
	if got, want := limits(resp), fmt.Sprintf("200 limit=%d remaining=%d", freeQuota, freeQuota-1); got != want {
		t.Errorf("after the service's errors: %s; want %s, the quota whole", got, want)
	}
	resp, _ = tg.get(t, "/orders/", "X-API-Key", "key-globex-1") // no such order: the service's 404
	if got, want := limits(resp), fmt.Sprintf("404 limit=%d remaining=%d", freeQuota, freeQuota-2); got != want {
		t.Errorf("a 404 of the service: %s; want %s, charged", got, want)
	}

	tg.upstreams[0].close() // the orders service goes down
	for i := range freeQuota + 10 {
		if resp, _ := tg.get(t, "/orders/1", "X-API-Key", "key-globex-1"); resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("request %d to the service down: %s; want 502", i+1, limits(resp))
		}
	}
	resp, _ = tg.get(t, "/search/?q=go", "X-API-Key", "key-globex-1")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("search: %s; want 200", limits(resp))
	}
	// The tenant's quota, which the search charged too, read from the orders route: 2 charged,
	// the search, and this request.
	resp, _ = tg.get(t, "/orders/fail", "X-API-Key", "key-globex-1")
	if got, want := limits(resp), fmt.Sprintf("502 limit=%d remaining=%d", freeQuota, freeQuota-4); got != want {
		t.Errorf("after the 502s: %s; want %s", got, want)
	}
}

// A stream passes through the guard and the proxy event by event: the client reads each
// event while the search service waits, before it sends the next; the stream's response has
// the rate-limit headers.
func TestStreamPassesThroughUnbuffered(t *testing.T) {
	tg := startGateway(t, config{})
	req, err := http.NewRequest(http.MethodGet, tg.url+"/search/stream?q=go", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", "key-globex-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-RateLimit-Limit") != fmt.Sprint(freeSearch) {
		t.Fatalf("the stream: %s %v; want 200, text/event-stream, X-RateLimit-Limit %d", limits(resp), resp.Header, freeSearch)
	}
	events := make(chan string)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		var event []string
		for sc.Scan() {
			if sc.Text() != "" {
				event = append(event, sc.Text())
				continue
			}
			events <- strings.Join(event, "\n")
			event = nil
		}
	}()
	for i := 1; i <= streamEvents; i++ {
		if i > 1 {
			tg.gate <- struct{}{} // the service is waiting here: it sends the next event now
		}
		select {
		case ev := <-events:
			if want := fmt.Sprintf("id: %d\ndata: result %d for %q", i, i, "go"); ev != want {
				t.Fatalf("event %d: %q; want %q", i, ev, want)
			}
		case <-time.After(30 * time.Second): // not a deadline: a buffered event never comes
			t.Fatalf("event %d has not reached the client while the service waits: the stream is buffered", i)
		}
	}
	if ev, ok := <-events; ok {
		t.Errorf("after the last event: %q", ev)
	}
}

// The tenant is the gateway's, never the client's: a request without a key that names a
// tenant and a plan in X-Tenant-ID and X-Tenant-Plan is limited as an anonymous client by
// its IP and reaches the service without them; a key no tenant holds is answered 401,
// charged to the IP's quota, and its 11th is refused.
func TestTenantHeadersFromTheGatewayOnly(t *testing.T) {
	tg := startGateway(t, config{})
	resp, body := tg.get(t, "/orders/1", "X-Tenant-ID", "acme", "X-Tenant-Plan", "pro")
	if got, want := limits(resp), fmt.Sprintf("200 limit=%d remaining=%d", anonQuota, anonQuota-1); got != want || !strings.Contains(body, `"tenant":""`) {
		t.Errorf("a forged tenant: %s %q; want %s, no tenant upstream", got, body, want)
	}
	for i := 2; i <= anonQuota; i++ {
		resp, body := tg.get(t, "/orders/1", "X-API-Key", "key-guessed-"+fmt.Sprint(i))
		if got, want := limits(resp), fmt.Sprintf("401 limit=%d remaining=%d", anonQuota, anonQuota-i); got != want || body != "unknown API key\n" {
			t.Fatalf("unknown key %d: %s %q; want %s", i, got, body, want)
		}
	}
	if resp, _ := tg.get(t, "/orders/1", "X-API-Key", "key-guessed-11"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the 11th guess: %s; want 429", limits(resp))
	}
}

// X-Forwarded-For is read only from the proxies -trust-proxies names: by default anonymous
// clients that each claim another address share the gateway peer's quota; behind a trusted
// load balancer (here the test's loopback address) each address has its own.
func TestTrustProxies(t *testing.T) {
	for _, c := range []struct {
		name    string
		trusted []string
		want    string // the status of the 11th client's first request
	}{
		{"untrusted", nil, "429"},
		{"trusted", []string{"127.0.0.1/32"}, "200"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := startGateway(t, config{trustProxies: c.trusted})
			for i := range anonQuota + 1 {
				resp, _ := tg.get(t, "/orders/1", "X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1))
				want := "200"
				if i == anonQuota {
					want = c.want
				}
				if got := fmt.Sprint(resp.StatusCode); got != want {
					t.Fatalf("client %d: %s; want %s", i+1, limits(resp), want)
				}
			}
		})
	}
}

// The rules file is reloaded while the gateway serves: its free quota raised to 60 applies to
// the next requests, without a restart.
func TestRulesReload(t *testing.T) {
	tg := startGateway(t, config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = tg.engine.WatchFile(ctx, tg.rules) }()
	t.Cleanup(func() { cancel(); <-done })

	data, err := os.ReadFile(tg.rules)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.NewReplacer(`version: "1"`, `version: "2"`,
		"{name: tenant-per-minute, limit: 30, window: 1m}", "{name: tenant-per-minute, limit: 60, window: 1m}").Replace(string(data))
	if edited == string(data) || strings.Count(edited, "limit: 60") != 2 {
		t.Fatal("gateway.yaml no longer has the free quota this test raises")
	}
	tmp := tg.rules + ".tmp"
	if err := os.WriteFile(tmp, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, tg.rules); err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); tg.engine.Version() != "2"; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatal("the edited rules were not applied in 30 s")
		}
	}
	if resp, _ := tg.get(t, "/orders/1", "X-API-Key", "key-globex-1"); limits(resp) != "200 limit=60 remaining=59" {
		t.Errorf("after the edit: %s; want the quota of 60", limits(resp))
	}
}

// A configuration that cannot work is an error at start, naming what to fix.
func TestBadConfiguration(t *testing.T) {
	base := func() config {
		return config{store: ratelimit.NewMemoryStore(), rulesPath: "gateway.yaml", keyHeader: "X-API-Key",
			pause: every(0), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	}
	for _, c := range []struct {
		name string
		edit func(*config)
		want string
	}{
		{"no key header", func(c *config) { c.keyHeader = "" }, "the API key header is empty"},
		{"the tenant header as the key's", func(c *config) { c.keyHeader = "x-tenant-id" }, "is one the gateway writes itself"},
		{"a proxy that is no network", func(c *config) { c.trustProxies = []string{"10.0.0.0/33"} }, "10.0.0.0/33"},
		{"no rules file", func(c *config) { c.rulesPath = "missing.yaml" }, "missing.yaml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := base()
			c.edit(&cfg)
			g, err := newGateway(cfg)
			if err == nil {
				g.close()
				t.Fatalf("no error; want one containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q; want it to contain %q", err, c.want)
			}
		})
	}
}
