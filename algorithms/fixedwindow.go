package algorithms

// FixedWindow admits at most Limit units of cost per window; windows are aligned to multiples
// of Window since the Unix epoch. Across a window boundary it may admit up to 2×Limit within one
// Window (Limit at the end of one window, Limit at the start of the next). Burst is not used.
//
// State: A = the window's index (now / Window), B = the cost admitted in it.
// Remaining is Limit minus the cost admitted in the current window; ResetAfter and RetryAfter
// are the time to the window's end. Should the clock go back, the state's window stays current.
type FixedWindow struct{}

// Name implements [Algorithm].
func (FixedWindow) Name() string { return "fixed_window" }

// Code implements [Algorithm].
func (FixedWindow) Code() string { return "fw" }

func (FixedWindow) sealed() {}

// Check implements [Algorithm].
func (FixedWindow) Check(p Params, s State, now, cost int64) (Result, State) {
	k := floorDiv(now, p.Window)
	if s.Init && s.A > k {
		k = s.A // the clock went back: stay in the state's window
	}
	if !s.Init || s.A != k {
		s = State{Init: true, A: k}
	}
	end := (k+1)*p.Window - now
	r := Result{Allowed: s.B+cost <= p.Limit}
	used := s.B
	switch {
	case r.Allowed:
		used += cost
	case cost > p.Limit:
		r.RetryAfter = Never
	default:
		r.RetryAfter = end
	}
	r.Remaining = p.Limit - used
	if used > 0 {
		r.ResetAfter = end
	}
	return r, s
}

// Charge implements [Algorithm].
func (FixedWindow) Charge(p Params, s State, now, cost int64) (State, int64) {
	s.B += cost
	return s, (s.A+1)*p.Window - now
}

// Refund implements [Algorithm]: the cost leaves the count if its window is still the state's.
func (FixedWindow) Refund(p Params, s State, now, cost, at int64) (State, int64) {
	if !s.Init || s.A != floorDiv(at, p.Window) {
		return s, 0
	}
	s.B = max(0, s.B-cost)
	return s, (s.A+1)*p.Window - now
}
