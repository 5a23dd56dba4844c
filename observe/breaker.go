package observe

// BreakerState is the state of a store's circuit breaker (see ratelimit.WithBreaker).
type BreakerState uint8

const (
	// BreakerClosed: calls go to the store.
	BreakerClosed BreakerState = iota
	// BreakerOpen: calls fail at once, of kind breaker_open (see [ErrorKind]).
	BreakerOpen
	// BreakerHalfOpen: one call at a time probes the store; the first that succeeds closes
	// the breaker, and a failure opens it again.
	BreakerHalfOpen

	numBreakerStates = iota
)

// String returns "closed", "open" or "half_open".
func (s BreakerState) String() string {
	switch s {
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half_open"
	}
	return "closed"
}

// BreakerStates returns every state, in the order of their values.
func BreakerStates() []BreakerState {
	s := make([]BreakerState, numBreakerStates)
	for i := range s {
		s[i] = BreakerState(i)
	}
	return s
}
