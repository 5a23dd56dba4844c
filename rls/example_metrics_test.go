package rls_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/rls"
	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// A server with its metrics and its health: the store is told the health's observer, the
// server both. Serve the registry with promhttp.HandlerFor, and report srv.Serving() (or
// srv.WatchHealth) to gRPC health, as the command does.
func ExampleNewMetrics() {
	cfg, err := rls.ParseConfig(rls.File{Name: "edge.yaml", Data: []byte(
		"domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: minute, requests_per_unit: 1}\n")})
	if err != nil {
		panic(err)
	}
	metrics, err := rls.NewMetrics()
	if err != nil {
		panic(err)
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(metrics)
	health := rls.NewStoreHealth()
	store := ratelimit.NewMemoryStore(ratelimit.WithObserver(health.Observer(nil)))
	srv, err := rls.NewServer(store, cfg, rls.WithMetrics(metrics), rls.WithStoreHealth(health))
	if err != nil {
		panic(err)
	}
	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*rlcommon.RateLimitDescriptor{
		{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: "ip", Value: "10.0.0.1"}}}}}
	for range 2 {
		resp, err := srv.ShouldRateLimit(context.Background(), req)
		if err != nil {
			panic(err)
		}
		fmt.Println(resp.OverallCode)
	}
	families, err := registry.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		switch f.GetName() {
		case "ratelimit_rls_calls_total", "ratelimit_service_rate_limit_over_limit", "ratelimit_rls_serving":
			for _, m := range f.Metric {
				if v := m.GetCounter().GetValue() + m.GetGauge().GetValue(); v > 0 {
					fmt.Println(f.GetName(), labels(m.Label), v)
				}
			}
		}
	}
	// Output:
	// OK
	// OVER_LIMIT
	// ratelimit_rls_calls_total code=OK 1
	// ratelimit_rls_calls_total code=OVER_LIMIT 1
	// ratelimit_rls_serving  1
	// ratelimit_service_rate_limit_over_limit domain=edge key1=ip 1
}

// labels writes a sample's labels as name=value, separated by spaces.
func labels(ls []*dto.LabelPair) string {
	var out []string
	for _, l := range ls {
		out = append(out, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(out, " ")
}
