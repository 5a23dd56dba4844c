package ratelimitotel_test

import (
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/metricstest"
	ratelimitotel "github.com/a7d3e0dd/ratelimit/otel"
)

// BenchmarkMiddleware measures the net/http middleware with the memory store and one policy
// that admits every request: without an observer (off), with this package's observer (on),
// and with one that does nothing (nop), which is what reporting costs the core. The cost of
// the metrics is on minus nop; the target is on within 10% of off. TestMeasureObserverCost
// takes the figures of docs/metrics.md from these.
func BenchmarkMiddleware(b *testing.B) {
	b.Run("off", metricstest.Middleware(nil))
	b.Run("on", metricstest.Middleware(newHooks(b)))
	b.Run("nop", metricstest.Middleware(metricstest.NopObserver()))
}

// TestMeasureObserverCost writes the section observer-otel of docs/results.md (with
// RATELIMIT_MEASURE=1; skipped otherwise): BenchmarkMiddleware's variants as ratios to off, in
// rounds, and BenchmarkDecided.
func TestMeasureObserverCost(t *testing.T) {
	metricstest.MeasureObserverCost(t, "../docs/results.md", "observer-otel", "OpenTelemetry (SDK) observer (otel: TestMeasureObserverCost)",
		newHooks(t), BenchmarkDecided)
}

// BenchmarkDecided measures Decided alone, for a decision of one policy from the store: what
// the metrics add to a request, less the event the core builds (see nop above).
func BenchmarkDecided(b *testing.B) {
	var c capture
	l := mustNew(b, ratelimit.NewMemoryStore(ratelimit.WithObserver(&ratelimit.Observer{Decided: c.Decided})), ratelimit.Policy{Limit: 1e9, Window: time.Hour})
	if _, err := allow(l, "k"); err != nil {
		b.Fatal(err)
	}
	e := c.e
	e.Latency = 3 * time.Microsecond
	obs, err := ratelimitotel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		obs.Hooks().Decided(e)
	}
}

// newHooks returns the hooks of a new Observer over the SDK, with a reader never read: what
// recording costs. An exporter reads on its own schedule, off the request path.
func newHooks(tb testing.TB) *ratelimit.Observer {
	obs, err := ratelimitotel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))
	if err != nil {
		tb.Fatal(err)
	}
	return obs.Hooks()
}
