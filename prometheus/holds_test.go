package ratelimitprom_test

import (
	"reflect"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/a7d3e0dd/ratelimit/internal/testing/metricstest"
	ratelimitprom "github.com/a7d3e0dd/ratelimit/prometheus"
)

// The holds of requests charged after they ran, as a user meets them (see metricstest.Holds):
// outstanding while their request runs, then settled, with the estimate error split by
// direction into histograms of the distance.
func TestHolds(t *testing.T) {
	obs := ratelimitprom.New()
	metricstest.Holds(t, obs.Hooks(), func() metricstest.HoldFigures {
		mfs := gather(t, obs)
		one := func(name string) *dto.Metric {
			if mf := mfs[name]; mf != nil && len(mf.GetMetric()) == 1 {
				return mf.GetMetric()[0]
			}
			t.Fatalf("%s: not one series", name)
			return nil
		}
		by := func(name, label, value string) *dto.Metric {
			for _, m := range mfs[name].GetMetric() {
				if hasLabels(m, map[string]string{label: value}) {
					return m
				}
			}
			t.Fatalf("no %s{%s=%q}", name, label, value)
			return nil
		}
		over := by("ratelimit_hold_estimate_error", "direction", "over").GetHistogram()
		under := by("ratelimit_hold_estimate_error", "direction", "under").GetHistogram()
		return metricstest.HoldFigures{
			Outstanding:  int64(one("ratelimit_holds_outstanding").GetGauge().GetValue()),
			Units:        int64(one("ratelimit_held_units").GetGauge().GetValue()),
			Settles:      int64(by("ratelimit_hold_settles_total", "expired", "false").GetCounter().GetValue()),
			Expired:      int64(by("ratelimit_hold_settles_total", "expired", "true").GetCounter().GetValue()),
			SettledUnits: int64(one("ratelimit_settled_units_total").GetCounter().GetValue()),
			Over:         int64(over.GetSampleCount()), Under: int64(under.GetSampleCount()),
			OverUnits: int64(over.GetSampleSum()), UnderUnits: int64(under.GetSampleSum()),
			UnderBy0: cumulative(t, under, 0), UnderBy10: cumulative(t, under, 10), OverBy10: cumulative(t, over, 10),
		}
	})
}

// cumulative returns the count of h's bucket of upper bound le.
func cumulative(t *testing.T, h *dto.Histogram, le float64) int64 {
	t.Helper()
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == le {
			return int64(b.GetCumulativeCount())
		}
	}
	t.Fatalf("no bucket le=%v", le)
	return 0
}

// Every hook of the Observer is set: an event of the core it did not count would be lost.
func TestEveryHookSet(t *testing.T) {
	v := reflect.ValueOf(ratelimitprom.New().Hooks()).Elem()
	for i := range v.NumField() {
		if v.Field(i).IsNil() {
			t.Errorf("Hooks().%s is nil", v.Type().Field(i).Name)
		}
	}
}
