package ratelimitprom_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/a7d3e0dd/ratelimit/internal/testing/metricstest"
)

// The helpers both metrics modules' tests share.
var (
	mustNew      = metricstest.MustNew
	allow        = metricstest.Allow
	refusedRedis = metricstest.RefusedRedis
	silentRedis  = metricstest.SilentRedis
)

// gather returns the metric families of o, through a pedantic registry (which also checks
// that what o collects matches what it describes).
func gather(t testing.TB, o prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(o)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	return byName
}

// sample returns the metric of family name whose labels are labels ("k=v,k=v"), or nil.
func sample(t testing.TB, o prometheus.Collector, name, labels string) *dto.Metric {
	t.Helper()
	mf := gather(t, o)[name]
	if mf == nil {
		return nil
	}
	for _, m := range mf.GetMetric() {
		var got []string
		for _, lp := range m.GetLabel() {
			got = append(got, lp.GetName()+"="+lp.GetValue())
		}
		if strings.Join(got, ",") == labels {
			return m
		}
	}
	return nil
}

// value returns the value of a counter or gauge, failing the test when there is none.
func value(t testing.TB, o prometheus.Collector, name, labels string) float64 {
	t.Helper()
	m := sample(t, o, name, labels)
	switch {
	case m == nil:
		t.Fatalf("no metric %s{%s}", name, labels)
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%s{%s} is neither a counter nor a gauge", name, labels)
	return 0
}
