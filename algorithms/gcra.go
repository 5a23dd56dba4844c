package algorithms

import "github.com/a7d3e0dd/ratelimit/internal/algo"

// GCRA is the generic cell rate algorithm: it keeps one timestamp, the theoretical arrival time
// (TAT) of the next request, and admits a request when the TAT it would move to is no more than
// Burst emission intervals (Window/Limit each; Burst defaults to Limit) ahead of now. It admits
// Burst at once, then one unit every Window/Limit. It is the default algorithm: one integer per
// key (three when the TAT falls on a fraction of a microsecond: the fraction and its
// denominator), exact, and the shortest honest Retry-After.
//
// Remaining is how many units would be admitted now, after this request; ResetAfter is the
// time until the TAT is now (everything available); RetryAfter is the time until this
// request's cost fits.
//
// A policy whose Limit or Burst changes (same Name and Window) keeps the TAT: the client keeps
// its debt in time, not in requests, and what it may send now is Burst minus that debt in new
// intervals (Window/Limit). With Burst at Limit the share of the bucket used carries over: a
// client that used 600 of 1,000 per minute (36 s from full) has used 1,200 of 2,000 after a
// raise (800 left, not a fresh 2,000), or 300 of 500 after a cut (200 left, though it sent 600),
// and a client the old limit refused is refused by the new one until its next interval at the
// new rate. The bucket's span Burst × Window/Limit may change too: a debt beyond the new span
// (Burst cut, or Limit raised with Burst set) is refused until it drains to there, and a span
// that grows (Limit cut with Burst set) admits that much more debt. A TAT at a fraction of a
// microsecond that the new interval cannot express rounds up to the next whole microsecond.
type GCRA struct{}

// Name implements [Algorithm].
func (GCRA) Name() string { return "gcra" }

func (GCRA) model() algo.Model { return gcraModel }
