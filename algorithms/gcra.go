package algorithms

// GCRA is the generic cell rate algorithm: it keeps one timestamp, the theoretical arrival time
// (TAT) of the next request, and admits a request when the TAT it would move to is no more than
// Burst emission intervals (Window/Limit each, Burst defaults to Limit) ahead of now. It admits
// Burst at once, then one request every Window/Limit.
//
// State: A = the TAT. Remaining is how many unit requests would be admitted now, after this one;
// ResetAfter is the time until the TAT is now (everything available); RetryAfter is the time
// until this request's cost fits.
type GCRA struct{}

// Name implements [Algorithm].
func (GCRA) Name() string { return "gcra" }

// Code implements [Algorithm].
func (GCRA) Code() string { return "gc" }

func (GCRA) sealed() {}

// Check implements [Algorithm].
func (GCRA) Check(p Params, s State, now, cost int64) (Result, State) {
	return checkTAT(p, s, now, cost, false)
}

// Charge implements [Algorithm].
func (GCRA) Charge(p Params, s State, now, cost int64) (State, int64) {
	return chargeTAT(p, s, now, cost)
}

// checkTAT is the check shared by GCRA and the shaping leaky bucket, which differ only in that
// shaping reports the wait for the request's slot as Delay.
func checkTAT(p Params, s State, now, cost int64, shaping bool) (Result, State) {
	capacity, interval := p.Capacity(), p.Interval()
	if !s.Init || s.A < now {
		s = State{Init: true, A: now}
	}
	horizon := now + capacity*interval // the latest TAT the bucket can hold
	next := s.A + cost*interval
	r := Result{Allowed: next <= horizon}
	tat := s.A
	switch {
	case r.Allowed:
		tat = next
		if shaping && cost > 0 {
			r.Delay = s.A - now
		}
	case cost > capacity:
		r.RetryAfter = Never
	default:
		r.RetryAfter = next - horizon
	}
	r.Remaining = max(0, horizon-tat) / interval
	r.ResetAfter = tat - now
	return r, s
}

func chargeTAT(p Params, s State, now, cost int64) (State, int64) {
	s.A += cost * p.Interval()
	return s, s.A - now
}

// Refund implements [Algorithm]: the TAT moves back by what of the charge time has not yet
// passed, never before now.
func (GCRA) Refund(p Params, s State, now, cost, at int64) (State, int64) {
	return refundTAT(p, s, now, cost, at)
}

func refundTAT(p Params, s State, now, cost, at int64) (State, int64) {
	if !s.Init || s.A <= now {
		return s, 0
	}
	s.A = max(now, s.A-unspent(p, now, cost, at))
	return s, s.A - now
}
