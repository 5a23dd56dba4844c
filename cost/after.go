package cost

// After is what a request cost, known when its response has been sent (or abandoned: a client
// that went away mid-stream was charged what was written to it).
type After struct {
	// Status is the status its client got; 500 when its handler panicked.
	Status int
	// Written is the bytes of the response body written (gRPC: of the messages sent).
	Written int64
	// Reported is the sum of what the handler reported with [Report]; HasReport says whether
	// it reported at all (0 reported is a cost of 0, not a missing one).
	Reported  int64
	HasReport bool
	// Estimate is what the request was admitted and held against: its ratelimit.WithCost,
	// clamped (see ratelimit.Limiter.Reserve).
	Estimate int64
}

// Failed reports whether the response is a server error (5xx, a panic included): the request
// failed through no fault of its client, and the functions of this package charge it nothing.
func (a After) Failed() bool { return a.Status >= 500 }

// Reported charges what the handler reported, or its estimate when it reported nothing;
// nothing for a server error. It is the usual choice for a handler that knows its cost (the
// usage of a completion).
func Reported(a After) int64 {
	switch {
	case a.Failed():
		return 0
	case a.HasReport:
		return a.Reported
	}
	return a.Estimate
}

// Written charges the bytes of the response body; nothing for a server error.
func Written(a After) int64 {
	if a.Failed() {
		return 0
	}
	return a.Written
}
