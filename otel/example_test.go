package ratelimitotel_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/a7d3e0dd/ratelimit"
	ratelimitotel "github.com/a7d3e0dd/ratelimit/otel"
)

// Record a limiter's decisions, and read them back as an exporter would.
func Example() {
	reader := sdkmetric.NewManualReader() // in production, a periodic reader and an exporter
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	metrics, err := ratelimitotel.New(mp) // or otel.GetMeterProvider()
	if err != nil {
		log.Fatal(err)
	}

	store := ratelimit.NewMemoryStore(ratelimit.WithObserver(metrics.Hooks())) // or NewRedisStore
	limiter, err := ratelimit.New(store, ratelimit.Policy{Name: "login", Limit: 2, Window: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		limiter.Allow(context.Background(), "192.0.2.1")
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != "ratelimit.policy.decisions" {
			continue
		}
		for _, outcome := range []string{"allowed", "denied"} { // the decisions of the store
			want := attribute.NewSet(attribute.String("ratelimit.policy", "login"), attribute.String("ratelimit.decision", outcome), attribute.String("ratelimit.source", "store"),
				attribute.Bool("ratelimit.policy.shadow", false))
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if dp.Attributes.Equals(&want) {
					fmt.Printf("%s %s: %d\n", m.Name, dp.Attributes.Encoded(attribute.DefaultEncoder()), dp.Value)
				}
			}
		}
	}
	// Output:
	// ratelimit.policy.decisions ratelimit.decision=allowed,ratelimit.policy=login,ratelimit.policy.shadow=false,ratelimit.source=store: 2
	// ratelimit.policy.decisions ratelimit.decision=denied,ratelimit.policy=login,ratelimit.policy.shadow=false,ratelimit.source=store: 1
}
