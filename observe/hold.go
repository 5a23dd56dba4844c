package observe

// HoldEvent is what an observer is told of a hold: the estimate of a request whose cost is
// known only after it ran, charged and held when it was admitted (ratelimit.Limiter.Reserve,
// ratelimit.ChargeAfter), and its settle, which charges the actual cost in its place. The
// metrics modules count from it the holds outstanding on an instance, the units settled and
// the estimate error.
type HoldEvent struct {
	// Settled is false when the hold is taken, true when it is settled.
	Settled bool
	// Estimate is what the hold charged.
	Estimate int64
	// Actual is what the settle charged in its place (0 when the hold is taken).
	Actual int64
	// Expired reports a settle of a hold that had outlived its lifetime (or was reset) and
	// been given back: the whole Actual was charged.
	Expired bool
}

// Error is the estimate error of a settle: what the request cost beyond its estimate
// (negative: below it).
func (e HoldEvent) Error() int64 { return e.Actual - e.Estimate }
