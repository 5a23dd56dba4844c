package algorithms

import "github.com/a7d3e0dd/ratelimit/internal/algo"

// LeakyBucket is a bucket that holds Burst units (default Limit) and leaks Limit per Window.
//
// Policing (the zero value) admits a request when its cost fits in the bucket and rejects it
// otherwise. Remaining is the room left; ResetAfter is the time until the bucket is empty;
// RetryAfter is the time until the cost fits. Policing admits exactly what [TokenBucket] and
// [GCRA] admit, and is kept as GCRA's one timestamp: the time the bucket is empty.
//
// Shaping (Shaping: true) turns the bucket into a queue with a constant output rate: every
// admitted request gets the next free slot and the decision's Delay says how long it must wait
// for it, so requests leave one every Window/Limit. A request is rejected when its wait would
// exceed the bucket's capacity (Burst intervals). Remaining is the number of slots still free;
// ResetAfter is the time until the queue is empty; RetryAfter is the time until the request
// would fit in the queue.
//
// Both are kept as GCRA's one timestamp, the time the bucket (or queue) is empty again, and a
// changed Limit or Burst keeps that time, as GCRA's documentation details: what the bucket
// holds scales with the new rate, and requests already queued keep the delays they were given.
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

func (b LeakyBucket) model() algo.Model {
	if b.Shaping {
		return shapingModel
	}
	return leakyModel
}
