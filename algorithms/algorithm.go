// Package algorithms names the six rate-limiting algorithms of ratelimit, and the in-flight
// limit, and documents their exact semantics. Choose one for a policy with its Algorithm field:
//
//	ratelimit.Policy{Limit: 100, Window: time.Minute, Algorithm: algorithms.SlidingCounter{}}
//
// The algorithms are values of distinct types behind the sealed [Algorithm] interface:
//
//	FixedWindow{}              at most Limit per aligned window
//	SlidingLog{}               at most Limit in every interval of length Window (exact)
//	SlidingCounter{}           weighted two-window estimate (approximate, 2 counters)
//	TokenBucket{}              capacity Burst, refilled at Limit per Window
//	LeakyBucket{}              holds Burst, drains at Limit per Window (policing)
//	LeakyBucket{Shaping: true} admits into a queue and delays each request to its slot
//	GCRA{}                     generic cell rate algorithm: Burst at once, then Limit per Window
//	InFlight{}                 at most Limit requests running at once; Window is a slot's lifetime
//
// Each runs the same way in memory and in Redis: one Go state transition (the memory store) and
// its Lua transcription (the Redis store), held to the same results by one conformance table.
// Time is counted in integer microseconds. The rate-based algorithms (token bucket, leaky
// bucket, GCRA) hold their emission interval Window/Limit as an exact fraction, so they admit
// exactly Limit per Window at any rate — 700,000 per second, or a bandwidth of 10^9 bytes per
// second with the cost in bytes — and nothing is rounded.
//
// # Changing a limit
//
// The stores keep a policy's state under its Name, its algorithm and its Window, not its Limit
// or Burst: a policy whose limit changes reads the state it had, and raising a limit hands no
// client a fresh quota. The window algorithms keep their counts (a fixed window's count, the
// sliding log's units, the sliding counter's two counts, the in-flight slots) and weigh them
// against the new limit, so a count over a lowered limit is refused until it drains. The
// rate-based algorithms keep the time their bucket is full again, so a client keeps its debt
// in time, which the new rate counts in other numbers of requests ([GCRA] works it out). Each
// type's documentation says exactly what carries over. A changed Name, algorithm or Window
// starts afresh.
package algorithms

import "github.com/a7d3e0dd/ratelimit/internal/algo"

// Algorithm is one rate-limiting algorithm. The interface is sealed: the Redis store runs a
// Lua transcription of each algorithm, so only the types of this package implement it.
type Algorithm interface {
	// Name is the algorithm's name in messages and policy names, e.g. "sliding_window_counter".
	Name() string

	model() algo.Model
}

// all is the one list of algorithms. Adding one is its Go file here (the public type and its
// model), its Lua file in internal/redisscripts, and its line below.
var all = []Algorithm{
	FixedWindow{},
	SlidingLog{},
	SlidingCounter{},
	TokenBucket{},
	LeakyBucket{},
	LeakyBucket{Shaping: true},
	GCRA{},
	InFlight{},
}

func init() {
	for _, a := range all {
		algo.Register(a, a.model())
	}
}

// All returns every algorithm, one value of each kind, in the order of the list above: the
// rate-limiting algorithms, then InFlight. A rules file or a command line names an algorithm
// by its Name; ranging over All finds it, and knows an algorithm added to this package at
// once.
func All() []Algorithm { return append([]Algorithm(nil), all...) }
