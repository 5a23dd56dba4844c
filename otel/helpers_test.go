package ratelimitotel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/a7d3e0dd/ratelimit/internal/testing/metricstest"
	ratelimitotel "github.com/a7d3e0dd/ratelimit/otel"
)

// meter is an Observer over an SDK whose reader the test reads.
type meter struct {
	*ratelimitotel.Observer
	reader *sdkmetric.ManualReader
}

func newMeter(t testing.TB) meter {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	obs, err := ratelimitotel.New(mp)
	if err != nil {
		t.Fatal(err)
	}
	return meter{obs, reader}
}

// metric returns the instrument named name, failing the test when there is none.
func (m meter) metric(t testing.TB, name string) metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ratelimitotel.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, ratelimitotel.ScopeName)
		}
		for _, mt := range sm.Metrics {
			if mt.Name == name {
				return mt
			}
		}
	}
	t.Fatalf("no instrument %s recorded", name)
	return metricdata.Metrics{}
}

// recorded reports whether the instrument named name recorded anything.
func (m meter) recorded(t testing.TB, name string) bool {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name == name {
				return true
			}
		}
	}
	return false
}

// sum returns the value of an int64 sum at the attributes kvs: 0 when none was recorded.
func (m meter) sum(t testing.TB, name string, kvs ...attribute.KeyValue) int64 {
	t.Helper()
	s, ok := m.metric(t, name).Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is not an int64 sum", name)
	}
	want := attribute.NewSet(kvs...)
	for _, dp := range s.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp.Value
		}
	}
	return 0
}

// histogram returns the data point of a float64 histogram at the attributes kvs.
func (m meter) histogram(t testing.TB, name string, kvs ...attribute.KeyValue) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	h, ok := m.metric(t, name).Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is not a float64 histogram", name)
	}
	want := attribute.NewSet(kvs...)
	for _, dp := range h.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp
		}
	}
	return metricdata.HistogramDataPoint[float64]{}
}

// histogram0 returns how many values were recorded in the histogram name under any attributes:
// 0 when the instrument recorded nothing.
func (m meter) histogram0(t testing.TB, name string) uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if h, ok := mt.Data.(metricdata.Histogram[float64]); ok && mt.Name == name {
				for _, dp := range h.DataPoints {
					n += dp.Count
				}
			}
		}
	}
	return n
}

// decisions returns the count of ratelimit.decisions of a policy, outcome and source.
func (m meter) decisions(t testing.TB, policy, outcome, source string) int64 {
	t.Helper()
	return m.sum(t, "ratelimit.policy.decisions", attribute.String("ratelimit.policy", policy), attribute.String("ratelimit.decision", outcome), attribute.String("ratelimit.source", source),
		attribute.Bool("ratelimit.policy.shadow", false))
}

// storeErrors returns the count of ratelimit.store.errors of a kind.
func (m meter) storeErrors(t testing.TB, kind string) int64 {
	t.Helper()
	return m.sum(t, "ratelimit.store.errors", attribute.String("error.type", kind))
}

// breaker checks the breaker instruments.
func (m meter) breaker(t testing.TB, open, opened, closed int64) {
	t.Helper()
	if got := m.sum(t, "ratelimit.breaker.open"); got != open {
		t.Errorf("ratelimit.breaker.open %d, want %d", got, open)
	}
	if got := m.sum(t, "ratelimit.breaker.transitions", attribute.String("ratelimit.breaker.state", "open")); got != opened {
		t.Errorf("transitions to open %d, want %d", got, opened)
	}
	if got := m.sum(t, "ratelimit.breaker.transitions", attribute.String("ratelimit.breaker.state", "closed")); got != closed {
		t.Errorf("transitions to closed %d, want %d", got, closed)
	}
}

// The helpers both metrics modules' tests share.
var (
	mustNew      = metricstest.MustNew
	allow        = metricstest.Allow
	refusedRedis = metricstest.RefusedRedis
	silentRedis  = metricstest.SilentRedis
)
