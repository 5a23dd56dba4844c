package ratelimitotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// errorBuckets are the bucket boundaries ratelimit.hold.estimate_error advises, in the units
// of the limits (tokens, bytes, requests): 0 (an exact estimate) to 10 million, in steps of
// about 3, so that tokens and bytes alike fall inside.
var errorBuckets = []float64{0, 1, 3, 10, 30, 100, 300, 1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7}

// holdInstruments record the holds of requests whose cost is known only after they ran
// (ratelimit.ChargeAfter, ratelimit.Limiter.Reserve), from the Held hook.
type holdInstruments struct {
	outstanding metric.Int64UpDownCounter // holds taken on this instance, not yet settled
	units       metric.Int64UpDownCounter // the units they hold
	settles     metric.Int64Counter       // by ratelimit.hold.expired
	settled     metric.Int64Counter       // the units the settles charged
	errors      metric.Int64Histogram     // |actual - estimate|, by ratelimit.hold.error_direction

	fresh, expired []metric.AddOption    // of settles
	over, under    []metric.RecordOption // of errors
}

// newHoldInstruments makes the instruments of holds of m.
func newHoldInstruments(m metric.Meter) (holdInstruments, error) {
	var h holdInstruments
	var errs [5]error
	h.outstanding, errs[0] = m.Int64UpDownCounter("ratelimit.hold.outstanding", metric.WithUnit("{hold}"),
		metric.WithDescription("Holds of requests whose cost is known only after they ran (ChargeAfter, Limiter.Reserve) taken on this instance and not yet settled."))
	h.units, errs[1] = m.Int64UpDownCounter("ratelimit.hold.units", metric.WithUnit("{unit}"),
		metric.WithDescription("Units (the estimates) the outstanding holds of this instance hold."))
	h.settles, errs[2] = m.Int64Counter("ratelimit.hold.settles", metric.WithUnit("{settle}"),
		metric.WithDescription("Holds settled with what their request cost, by ratelimit.hold.expired: true when the hold had outlived its lifetime (or its identity was reset) and been given back, so the whole actual was charged."))
	h.settled, errs[3] = m.Int64Counter("ratelimit.hold.settled_units", metric.WithUnit("{unit}"),
		metric.WithDescription("Units the settles of holds charged: what the requests cost."))
	h.errors, errs[4] = m.Int64Histogram("ratelimit.hold.estimate_error", metric.WithUnit("{unit}"),
		metric.WithDescription("How far each settled request's cost was from its estimate, by ratelimit.hold.error_direction: over (it cost more: an overdraft) or under (it cost the estimate or less: the difference given back); the value is the distance, never negative."),
		metric.WithExplicitBucketBoundaries(errorBuckets...))
	if err := errors.Join(errs[:]...); err != nil {
		return h, err
	}
	h.fresh = addOptions(attribute.Bool("ratelimit.hold.expired", false))
	h.expired = addOptions(attribute.Bool("ratelimit.hold.expired", true))
	h.over = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("ratelimit.hold.error_direction", "over")))}
	h.under = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("ratelimit.hold.error_direction", "under")))}
	// Every series but the histogram's exists from the start, at 0, so that the first settle,
	// the first expired one, is an increase.
	ctx := context.Background()
	h.outstanding.Add(ctx, 0)
	h.units.Add(ctx, 0)
	h.settles.Add(ctx, 0, h.fresh...)
	h.settles.Add(ctx, 0, h.expired...)
	h.settled.Add(ctx, 0)
	return h, nil
}

// held is the Held hook: a hold taken counts in ratelimit.hold.outstanding and its estimate in
// ratelimit.hold.units until it is settled; a settle counts in ratelimit.hold.settles and
// ratelimit.hold.settled_units, and its estimate error is recorded.
func (h *holdInstruments) held(e observe.HoldEvent) {
	ctx := context.Background() // a hold carries no request context
	if !e.Settled {
		h.outstanding.Add(ctx, 1)
		h.units.Add(ctx, e.Estimate)
		return
	}
	h.outstanding.Add(ctx, -1)
	h.units.Add(ctx, -e.Estimate)
	h.settled.Add(ctx, max(e.Actual, 0)) // never negative from the core; a counter takes no less than 0
	if e.Expired {
		h.settles.Add(ctx, 1, h.expired...)
	} else {
		h.settles.Add(ctx, 1, h.fresh...)
	}
	if d := e.Error(); d > 0 {
		h.errors.Record(ctx, d, h.over...)
	} else {
		h.errors.Record(ctx, -d, h.under...)
	}
}
