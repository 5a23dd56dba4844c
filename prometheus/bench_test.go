package ratelimitprom_test

import (
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/metricstest"
	ratelimitprom "github.com/a7d3e0dd/ratelimit/prometheus"
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

// TestMeasureObserverCost writes the section observer-prometheus of docs/results.md (with
// RATELIMIT_MEASURE=1; skipped otherwise): BenchmarkMiddleware's variants as ratios to off, in
// rounds, and BenchmarkDecided.
func TestMeasureObserverCost(t *testing.T) {
	metricstest.MeasureObserverCost(t, "../docs/results.md", "observer-prometheus", "Prometheus observer (prometheus: TestMeasureObserverCost)",
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
	obs := ratelimitprom.New()
	b.ReportAllocs()
	for b.Loop() {
		obs.Hooks().Decided(e)
	}
}

// newHooks returns the hooks of a new Observer, over a registry of its own.
func newHooks(testing.TB) *ratelimit.Observer { return ratelimitprom.New().Hooks() }
