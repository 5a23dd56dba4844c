package algorithms

import "github.com/a7d3e0dd/ratelimit/internal/algo"

// GCRA is the generic cell rate algorithm: it keeps one timestamp, the theoretical arrival time
// (TAT) of the next request, and admits a request when the TAT it would move to is no more than
// Burst emission intervals (Window/Limit each; Burst defaults to Limit) ahead of now. It admits
// Burst at once, then one unit every Window/Limit. It is the default algorithm: one integer per
// key (two when Window/Limit is not a whole number of microseconds), exact, and the shortest
// honest Retry-After.
//
// Remaining is how many units would be admitted now, after this request; ResetAfter is the
// time until the TAT is now (everything available); RetryAfter is the time until this
// request's cost fits.
type GCRA struct{}

// Name implements [Algorithm].
func (GCRA) Name() string { return "gcra" }

func (GCRA) model() algo.Model { return tat{code: "gc"} }
