// Package algorithms defines the six rate-limiting algorithms of ratelimit and their exact
// semantics, as Go state transitions.
//
// Every algorithm works in integer microseconds on a [State] of a few integers (the sliding
// log keeps a list of timestamps). The memory store runs these transitions directly; the Redis
// store runs a Lua transcription of the same transitions (package internal/redisscripts), and
// one conformance suite holds both to the same table of cases.
//
// The algorithms are values of distinct types behind the sealed [Algorithm] interface:
//
//	FixedWindow{}             at most Limit per aligned window
//	SlidingLog{}              at most Limit in every interval of length Window (exact)
//	SlidingCounter{}          weighted two-window estimate (approximate, 2 counters)
//	TokenBucket{}             capacity Burst, refilled at Limit per Window
//	LeakyBucket{}             holds Burst, drains at Limit per Window (policing)
//	LeakyBucket{Shaping: true} admits into a queue and returns the delay until the request's slot
//	GCRA{}                    generic cell rate algorithm: one timestamp, Burst at once
//
// For the rate-based algorithms (token bucket, leaky bucket, GCRA) the emission interval is
// Window/Limit rounded up to a whole microsecond, so they never admit faster than Limit per Window.
package algorithms

// Never is the RetryAfter of a request that can never be admitted: its cost exceeds the
// policy's capacity.
const Never int64 = -1

// Params are the parameters of one policy, in integer units.
type Params struct {
	// Limit is the number of requests (units of cost) admitted per Window.
	Limit int64
	// Window is the policy's window in microseconds.
	Window int64
	// Burst is the capacity of the bucket algorithms; 0 means Limit. The window algorithms
	// ignore it.
	Burst int64
}

// Capacity is the largest cost one request can ever have under p: Burst when set, else Limit.
func (p Params) Capacity() int64 {
	if p.Burst > 0 {
		return p.Burst
	}
	return p.Limit
}

// Interval is the emission interval of the rate-based algorithms: Window/Limit in microseconds,
// rounded up.
func (p Params) Interval() int64 {
	return (p.Window + p.Limit - 1) / p.Limit
}

// State is the stored state of one policy for one key. Its meaning depends on the algorithm;
// the zero value (Init false) is "no state": a key never seen or expired.
type State struct {
	// Init reports whether the state holds anything.
	Init bool
	// A, B and C are the algorithm's integers (see each algorithm's documentation).
	A, B, C int64
	// Log holds the sliding log's admitted timestamps, oldest first, one per unit of cost.
	Log []int64
}

// Result is the outcome of checking one request against one policy. Durations are in
// microseconds.
type Result struct {
	// Allowed reports whether the request fits the policy.
	Allowed bool
	// Remaining is how many units of cost the policy would still admit right now, after this
	// request when it is allowed.
	Remaining int64
	// ResetAfter is the time until the policy's state is back to fresh (everything available).
	ResetAfter int64
	// RetryAfter is the time until this request's cost would be admitted: 0 when allowed,
	// [Never] when the cost exceeds the policy's capacity.
	RetryAfter int64
	// Delay is the time the request must wait for its slot (leaky bucket shaping only).
	Delay int64
	// At is the time of the check, in microseconds: a refund of its charge names it. The
	// stores fill it in.
	At int64
}

// Algorithm is one rate-limiting algorithm. Check evaluates a request of cost units at time now
// (microseconds) without charging it and returns the state normalised (what has expired
// dropped, buckets refilled, windows rolled), which changes no decision and may be kept or
// thrown away. Charge then adds the request to that state; the caller charges only when every
// policy of a list allowed the request. A cost of 0 is always allowed and reads the state.
//
// The sliding log's Log may be reused in place: keep only the state returned last.
//
// The interface is sealed: the Redis store has a Lua transcription of each algorithm, so only
// the types of this package implement it.
type Algorithm interface {
	// Name is the algorithm's name in rule files and messages, e.g. "sliding_window_counter".
	Name() string
	// Code is the short code of the algorithm in storage keys and in the Lua dispatch.
	Code() string
	// Check evaluates a request; see the type comment.
	Check(p Params, s State, now, cost int64) (Result, State)
	// Charge adds a request that Check allowed to the state Check returned, and returns the
	// new state and how long, in microseconds, it matters: after that it is equivalent to no
	// state and may be dropped.
	Charge(p Params, s State, now, cost int64) (State, int64)
	// Refund gives back a charge of cost units made at time at, as far as the charge still
	// weighs on s, and returns the new state and how long it matters. It never gives back
	// what time has already given back (a bucket that refilled since, a window that ended, a
	// logged unit that left the window), so nothing is credited twice.
	Refund(p Params, s State, now, cost, at int64) (State, int64)

	sealed()
}

// unspent is the part, in microseconds, of a charge of cost units made at time at that the
// rate-based algorithms have not yet given back by refilling: at least that much of the
// charge still weighs on the state at now.
func unspent(p Params, now, cost, at int64) int64 {
	return max(0, min(cost*p.Interval(), at+cost*p.Interval()-now))
}

// ceilDiv is a/b rounded up, for a >= 0 and b > 0.
func ceilDiv(a, b int64) int64 {
	return (a + b - 1) / b
}

// floorDiv is a/b rounded down, for b > 0 and any a.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
