package ratelimitotel_test

import (
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/a7d3e0dd/ratelimit/internal/testing/metricstest"
)

// The holds of requests charged after they ran, as a user meets them (see metricstest.Holds):
// outstanding while their request runs, then settled, with the estimate error split by
// direction into histograms of the distance.
func TestHolds(t *testing.T) {
	m := newMeter(t)
	metricstest.Holds(t, m.Hooks(), func() metricstest.HoldFigures {
		over := m.unitsHistogram(t, "ratelimit.hold.estimate_error", attribute.String("ratelimit.hold.error_direction", "over"))
		under := m.unitsHistogram(t, "ratelimit.hold.estimate_error", attribute.String("ratelimit.hold.error_direction", "under"))
		return metricstest.HoldFigures{
			Outstanding:  m.sum(t, "ratelimit.hold.outstanding"),
			Units:        m.sum(t, "ratelimit.hold.units"),
			Settles:      m.sum(t, "ratelimit.hold.settles", attribute.Bool("ratelimit.hold.expired", false)),
			Expired:      m.sum(t, "ratelimit.hold.settles", attribute.Bool("ratelimit.hold.expired", true)),
			SettledUnits: m.sum(t, "ratelimit.hold.settled_units"),
			Over:         int64(over.Count), Under: int64(under.Count),
			OverUnits: over.Sum, UnderUnits: under.Sum,
			UnderBy0: upTo(t, under, 0), UnderBy10: upTo(t, under, 10), OverBy10: upTo(t, over, 10),
		}
	})
}

// unitsHistogram returns the data point of an int64 histogram at the attributes kvs (none
// recorded yet: an empty one).
func (m meter) unitsHistogram(t testing.TB, name string, kvs ...attribute.KeyValue) metricdata.HistogramDataPoint[int64] {
	t.Helper()
	if !m.recorded(t, name) {
		return metricdata.HistogramDataPoint[int64]{}
	}
	h, ok := m.metric(t, name).Data.(metricdata.Histogram[int64])
	if !ok {
		t.Fatalf("%s is not an int64 histogram", name)
	}
	want := attribute.NewSet(kvs...)
	for _, dp := range h.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp
		}
	}
	return metricdata.HistogramDataPoint[int64]{}
}

// upTo returns how many values dp counts at or below the bound le, one of its boundaries.
func upTo(t *testing.T, dp metricdata.HistogramDataPoint[int64], le float64) int64 {
	t.Helper()
	if dp.Count == 0 {
		return 0
	}
	var n uint64
	for i, b := range dp.Bounds {
		n += dp.BucketCounts[i]
		if b == le {
			return int64(n)
		}
	}
	t.Fatalf("no bucket boundary %v in %v", le, dp.Bounds)
	return 0
}

// Every hook of the Observer is set: an event of the core it did not record would be lost.
func TestEveryHookSet(t *testing.T) {
	v := reflect.ValueOf(newMeter(t).Hooks()).Elem()
	for i := range v.NumField() {
		if v.Field(i).IsNil() {
			t.Errorf("Hooks().%s is nil", v.Type().Field(i).Name)
		}
	}
}
