package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// TestEveryFrameworkServesItsRoutes starts each framework's server as a run does and sends
// one request to each route: every one must be answered OK, and the adapter's must carry the
// rate-limit fields of its one policy, so that the table compares what it says it does (a
// route that failed, or an adapter that was not in the path, would measure something else).
func TestEveryFrameworkServesItsRoutes(t *testing.T) {
	addr := redistest.Addr(t)
	ctx := t.Context()
	e, err := newEnv(ctx, addr, settings{conns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer e.client.Close()
	for _, fw := range frameworks {
		t.Run(fw.name, func(t *testing.T) {
			store := ratelimit.NewRedisStore(e.client, ratelimit.WithPrefix("abtest:"+fw.name+":"))
			defer store.Close()
			l, err := ratelimit.New(store, neverDenies)
			if err != nil {
				t.Fatal(err)
			}
			tg, err := fw.serve(e, l)
			if err != nil {
				t.Fatal(err)
			}
			defer tg.close()
			for _, route := range routes {
				limit := limitOf(t, ctx, tg, route)
				if want := route == "ours"; (limit == "1000000") != want {
					t.Errorf("%s: the rate-limit limit field is %q; want it set to the policy's only through the adapter", route, limit)
				}
			}
		})
	}
}

// limitOf sends one request to route of tg and returns its rate-limit limit field ("" when it
// has none); it fails the test if the request is not answered OK.
func limitOf(t *testing.T, ctx context.Context, tg target, route string) string {
	t.Helper()
	switch tg := tg.(type) {
	case httpTarget:
		resp, err := http.Get(tg.base + "/" + route)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != "ok" {
			t.Fatalf("%s: %d %q; want 200 \"ok\"", route, resp.StatusCode, body)
		}
		return resp.Header.Get("X-RateLimit-Limit")
	case *grpcTarget:
		var md metadata.MD
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := tg.check(ctx, route, &md); err != nil {
			t.Fatalf("%s: %v", route, err)
		}
		return strings.Join(md.Get("x-ratelimit-limit"), ",")
	}
	t.Fatalf("a target of type %T", tg)
	return ""
}

// TestLoadTimesEveryCall puts a short load on the gRPC target (the HTTP one is loadgen's,
// tested there): every call answered, each timed.
func TestLoadTimesEveryCall(t *testing.T) {
	addr := redistest.Addr(t)
	e, err := newEnv(t.Context(), addr, settings{conns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer e.client.Close()
	store := ratelimit.NewRedisStore(e.client, ratelimit.WithPrefix("abtest:load:"))
	defer store.Close()
	l, err := ratelimit.New(store, neverDenies)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := serveGRPC(e, l)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.close()
	res, err := tg.load(t.Context(), "ours", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bad != 0 || res.RPS <= 0 || res.P50 <= 0 || res.P99 < res.P50 || res.P999 < res.P99 {
		t.Fatalf("load = %+v; want every call answered, and p50 <= p99 <= p99.9", res)
	}
}

// TestMarkdown checks the table's rows from figures: the ratios against the floor, PASS at
// the target and MISS above it, and a framework left out by -only.
func TestMarkdown(t *testing.T) {
	f := figures{}
	for _, what := range []string{"rate", "p50", "p99", "p999"} {
		f[key("gin", what, "bare")] = 100
		f[key("gin", what, "floor")] = 200
	}
	f[key("gin", "rate", "ours")] = 150
	f[key("gin", "p50", "ours")] = 250
	f[key("gin", "p99", "ours")] = 220  // 1.10×: PASS
	f[key("gin", "p999", "ours")] = 240 // 1.20×: MISS
	got := markdown(f, "gin")
	for _, want := range []string{
		"### 39 Gin (adapters/gin)",
		"| requests/s: the adapter, 1 policy | `tail.gin.rate.ours` | 0.1k/s | 0.2k/s | 0.75× |  |  |",
		"| p50: the adapter, 1 policy | `tail.gin.p50.ours` | 250.0 µs | 200.0 µs | 1.25× |  |  |",
		"| p99: the adapter, 1 policy | `tail.gin.p99.ours` | 220.0 µs | 200.0 µs | 1.10× | ≤ 1.10× | PASS |",
		"| p99: the adapter, against the bare handler | `tail.gin.p99.ours` | 220.0 µs | 100.0 µs | 2.20× |  |  |",
		"| p99.9: the adapter, 1 policy | `tail.gin.p999.ours` | 240.0 µs | 200.0 µs | 1.20× | ≤ 1.10× | MISS |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Echo") {
		t.Errorf("-only gin printed another framework:\n%s", got)
	}
}
