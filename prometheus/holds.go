package ratelimitprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// errorBuckets are the upper bounds of ratelimit_hold_estimate_error, in the units of the
// limits (tokens, bytes, requests): 0 (an exact estimate) to 10 million, in steps of about
// 3, so that tokens and bytes alike fall inside.
var errorBuckets = []float64{0, 1, 3, 10, 30, 100, 300, 1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7}

// holdMetrics are the metrics of the holds of requests whose cost is known only after they
// ran (ratelimit.ChargeAfter, ratelimit.Limiter.Reserve), counted from the Held hook.
type holdMetrics struct {
	outstanding prometheus.Gauge         // holds taken on this instance, not yet settled
	units       prometheus.Gauge         // the units they hold
	settles     *prometheus.CounterVec   // by expired
	settled     prometheus.Counter       // the units the settles charged
	errors      *prometheus.HistogramVec // |actual - estimate|, by direction

	fresh, expired prometheus.Counter  // of settles
	over, under    prometheus.Observer // of errors
}

func newHoldMetrics() holdMetrics {
	h := holdMetrics{
		outstanding: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ratelimit_holds_outstanding",
			Help: "Holds of requests whose cost is known only after they ran (ChargeAfter, Limiter.Reserve) taken on this instance and not yet settled.",
		}),
		units: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ratelimit_held_units",
			Help: "Units (the estimates) the outstanding holds of this instance hold.",
		}),
		settles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ratelimit_hold_settles_total",
			Help: "Holds settled with what their request cost, by expired: true when the hold had outlived its lifetime (or its identity was reset) and been given back, so the whole actual was charged.",
		}, []string{"expired"}),
		settled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ratelimit_settled_units_total",
			Help: "Units the settles of holds charged: what the requests cost.",
		}),
		errors: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ratelimit_hold_estimate_error",
			Help:    "How far each settled request's cost was from its estimate, in units, by direction: over (it cost more: an overdraft) or under (it cost the estimate or less: the difference given back); the value is the distance, never negative.",
			Buckets: errorBuckets,
		}, []string{"direction"}),
	}
	h.fresh, h.expired = h.settles.WithLabelValues("false"), h.settles.WithLabelValues("true")
	h.over, h.under = h.errors.WithLabelValues("over"), h.errors.WithLabelValues("under")
	return h
}

// collectors returns the metrics, for Describe and Collect.
func (h *holdMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{h.outstanding, h.units, h.settles, h.settled, h.errors}
}

// held is the Held hook: a hold taken counts in ratelimit_holds_outstanding and its estimate
// in ratelimit_held_units until it is settled; a settle counts in ratelimit_hold_settles_total
// and ratelimit_settled_units_total, and its estimate error is observed.
func (h *holdMetrics) held(e observe.HoldEvent) {
	if !e.Settled {
		h.outstanding.Inc()
		h.units.Add(float64(e.Estimate))
		return
	}
	h.outstanding.Dec()
	h.units.Sub(float64(e.Estimate))
	h.settled.Add(float64(max(e.Actual, 0))) // never negative from the core; a counter panics at less than 0
	if e.Expired {
		h.expired.Inc()
	} else {
		h.fresh.Inc()
	}
	if d := e.Error(); d > 0 {
		h.over.Observe(float64(d))
	} else {
		h.under.Observe(float64(-d))
	}
}
