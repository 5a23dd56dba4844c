package algorithms

// TokenBucket holds up to Burst tokens (default Limit) and adds one every Window/Limit; a
// request takes cost tokens. A full bucket admits Burst at once, then Limit per Window.
//
// State: A = tokens, B = the time the next token's interval started. A missing state is a full
// bucket. Remaining is the tokens left; ResetAfter is the time until the bucket is full again;
// RetryAfter is the time until it holds cost tokens.
//
// For the same parameters a token bucket admits exactly the requests that [LeakyBucket]
// (policing) and [GCRA] admit: they are one meter kept in three shapes.
type TokenBucket struct{}

// Name implements [Algorithm].
func (TokenBucket) Name() string { return "token_bucket" }

// Code implements [Algorithm].
func (TokenBucket) Code() string { return "tb" }

func (TokenBucket) sealed() {}

// Check implements [Algorithm].
func (TokenBucket) Check(p Params, s State, now, cost int64) (Result, State) {
	capacity, interval := p.Capacity(), p.Interval()
	if !s.Init {
		s = State{Init: true, A: capacity, B: now}
	}
	if now > s.B {
		if add := (now - s.B) / interval; add > 0 {
			s.A = min(capacity, s.A+add)
			s.B += add * interval
		}
	}
	if s.A >= capacity {
		s.B = max(s.B, now)
	}
	r := Result{Allowed: cost <= s.A}
	tokens := s.A
	switch {
	case r.Allowed:
		tokens -= cost
	case cost > capacity:
		r.RetryAfter = Never
	default:
		r.RetryAfter = s.B + (cost-s.A)*interval - now
	}
	r.Remaining = tokens
	if tokens < capacity {
		r.ResetAfter = s.B + (capacity-tokens)*interval - now
	}
	return r, s
}

// Charge implements [Algorithm].
func (TokenBucket) Charge(p Params, s State, now, cost int64) (State, int64) {
	s.A -= cost
	return s, s.B + (p.Capacity()-s.A)*p.Interval() - now
}

// Refund implements [Algorithm]: the tokens the bucket has not refilled since at go back into
// it, which never overflows.
func (a TokenBucket) Refund(p Params, s State, now, cost, at int64) (State, int64) {
	if !s.Init {
		return s, 0
	}
	_, s = a.Check(p, s, now, 0) // refill to now
	s.A = min(p.Capacity(), s.A+unspent(p, now, cost, at)/p.Interval())
	return s, s.B + (p.Capacity()-s.A)*p.Interval() - now
}
