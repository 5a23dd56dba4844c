package algorithms

// LeakyBucket is a bucket that holds Burst units (default Limit) and leaks one every
// Window/Limit.
//
// Policing (the zero value) admits a request when its cost fits in the bucket and rejects it
// otherwise. State: A = the bucket's level, B = the time the current leak interval started.
// Remaining is the room left; ResetAfter is the time until the bucket is empty; RetryAfter is
// the time until the cost fits. Policing admits exactly what [TokenBucket] and [GCRA] admit.
//
// Shaping (Shaping: true) turns the bucket into a queue with a constant output rate: every
// admitted request gets the next free slot and Result.Delay says how long it must wait for it,
// so requests leave one every Window/Limit. A request is rejected when its wait would exceed the
// bucket's capacity (Burst intervals). State: A = the time the queue is free again. Remaining is
// the number of slots still free; ResetAfter is the time until the queue is empty; RetryAfter is
// the time until the request would fit in the queue.
type LeakyBucket struct {
	// Shaping makes the bucket delay requests instead of admitting them at once.
	Shaping bool
}

// Name implements [Algorithm].
func (b LeakyBucket) Name() string {
	if b.Shaping {
		return "leaky_bucket_shaping"
	}
	return "leaky_bucket"
}

// Code implements [Algorithm].
func (b LeakyBucket) Code() string {
	if b.Shaping {
		return "ls"
	}
	return "lb"
}

func (LeakyBucket) sealed() {}

// Check implements [Algorithm].
func (b LeakyBucket) Check(p Params, s State, now, cost int64) (Result, State) {
	if b.Shaping {
		return checkTAT(p, s, now, cost, true)
	}
	capacity, interval := p.Capacity(), p.Interval()
	if !s.Init {
		s = State{Init: true, B: now}
	}
	if now > s.B {
		if leaked := (now - s.B) / interval; leaked > 0 {
			s.A = max(0, s.A-leaked)
			s.B += leaked * interval
		}
	}
	if s.A == 0 {
		s.B = max(s.B, now)
	}
	r := Result{Allowed: s.A+cost <= capacity}
	level := s.A
	switch {
	case r.Allowed:
		level += cost
	case cost > capacity:
		r.RetryAfter = Never
	default:
		r.RetryAfter = s.B + (s.A+cost-capacity)*interval - now
	}
	r.Remaining = capacity - level
	if level > 0 {
		r.ResetAfter = s.B + level*interval - now
	}
	return r, s
}

// Charge implements [Algorithm].
func (b LeakyBucket) Charge(p Params, s State, now, cost int64) (State, int64) {
	if b.Shaping {
		return chargeTAT(p, s, now, cost)
	}
	s.A += cost
	return s, s.B + s.A*p.Interval() - now
}

// Refund implements [Algorithm]: what has not leaked since at leaves the bucket (or the
// queue, when shaping).
func (b LeakyBucket) Refund(p Params, s State, now, cost, at int64) (State, int64) {
	if b.Shaping {
		return refundTAT(p, s, now, cost, at)
	}
	if !s.Init {
		return s, 0
	}
	_, s = b.Check(p, s, now, 0) // leak to now
	s.A = max(0, s.A-unspent(p, now, cost, at)/p.Interval())
	if s.A == 0 {
		s.B = max(s.B, now)
	}
	return s, s.B + s.A*p.Interval() - now
}
