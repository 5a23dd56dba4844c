package algorithms

import (
	"fmt"
	"slices"

	"github.com/a7d3e0dd/ratelimit/internal/algo"
)

// SlidingLog admits at most Limit units of cost in every interval of length Window: it keeps
// the time of every admitted unit, so it is exact, and its memory grows with Limit, which is
// therefore at most 1,000. Burst is not used.
//
// State: Log = the admitted units' timestamps within the last Window, oldest first. Should the
// clock go back, new units are logged at the newest time, so the order holds.
// Remaining is Limit minus the units in the log (0 when a lowered limit is below them);
// ResetAfter is the time until the newest unit leaves the window; RetryAfter is the time until
// enough units leave it for this request; Next is the time until the oldest unit leaves it
// (the first unit more, once Remaining is spent), a Window when the log is empty.
//
// A policy whose Limit changes (same Name and Window) keeps the log as it is: each unit counts
// until Window after it was admitted, under any limit. A log that holds more units than a
// lowered limit refuses every request until enough of them have left the window.
type SlidingLog struct{}

// Name implements [Algorithm].
func (SlidingLog) Name() string { return "sliding_window_log" }

func (SlidingLog) model() algo.Model { return slidingLog{} }

// slidingLog is the model of [SlidingLog].
type slidingLog struct{}

func (slidingLog) Code() string    { return "sl" }
func (slidingLog) UsesBurst() bool { return false }
func (slidingLog) Shapes() bool    { return false }
func (slidingLog) ExactWait() bool { return true }

// KeepsLog says that the state is a log of timestamps (see algo.LogKeeper); the in-flight
// slots, which embed the sliding log, keep one too.
func (slidingLog) KeepsLog() {}
func (slidingLog) Validate(p algo.Params) error {
	if p.Limit > maxLogLimit {
		return fmt.Errorf("Limit is %d, but the sliding log keeps one entry per unit of cost, written in one step, and allows at most %d; use SlidingCounter (approximate, two counters) or GCRA (exact, one value)", p.Limit, maxLogLimit)
	}
	return nil
}

// maxLogLimit bounds the sliding log's entries per key, and so what one request can cost:
// a request of cost c writes c entries at once, in one script that holds Redis meanwhile
// (about 2 µs of Redis time per entry). At 100,000, one request held Redis for 200 ms and
// other tenants' checks missed their deadlines; at 1,000 the worst request takes 1.9–2.5 ms
// of Redis time (BenchmarkRedisSlidingLogWorstCase), about a hundred ordinary checks, and a
// full log tens of kilobytes.
const maxLogLimit = 1_000

func (slidingLog) Check(p *algo.Params, s *algo.State, now, cost int64, r *algo.Result) {
	*r = algo.Result{}
	s.Init = true
	// A unit admitted at t counts while now < t+Window. Dropping re-slices: the entries before
	// are not moved, so a state that is not kept is not disturbed.
	drop, _ := slices.BinarySearch(s.Log, now-p.Window+1) // the first unit still in the window
	s.Log = s.Log[drop:]
	n := int64(len(s.Log))
	r.Allowed = cost == 0 || n+cost <= p.Limit // cost 0 reads, even over a lowered limit
	used := n
	newest := int64(0)
	if n > 0 {
		newest = s.Log[n-1]
	}
	switch {
	case r.Allowed:
		used += cost
		if cost > 0 {
			newest = max(newest, now) // see Charge
		}
	case cost > p.Limit:
		r.RetryAfter = algo.Never
	default: // room comes when the (n+cost−Limit)th oldest unit leaves; n may exceed a lowered Limit
		r.RetryAfter = s.Log[n+cost-p.Limit-1] + p.Window - now
	}
	r.Remaining = max(p.Limit-used, 0)
	if used > 0 {
		r.ResetAfter = newest + p.Window - now
	}
	// Were Remaining spent now, the log would hold used+Remaining units, the last ones at
	// max(now, newest): one more fits when unit number used+Remaining−Limit leaves.
	if i := used + r.Remaining - p.Limit; i < n {
		r.Next = s.Log[i] + p.Window - now
	} else {
		r.Next = max(now, newest) + p.Window - now
	}
}

func (slidingLog) Charge(p *algo.Params, s *algo.State, now, cost int64) int64 {
	at := now
	if n := len(s.Log); n > 0 && at < s.Log[n-1] {
		at = s.Log[n-1] // the clock went back: keep the log in order
	}
	for i := int64(0); i < cost; i++ {
		s.Log = append(s.Log, at)
	}
	if len(s.Log) == 0 {
		return 0
	}
	return s.Log[len(s.Log)-1] + p.Window - now
}

// Refund: up to cost of the units logged at time at leave the log.
func (slidingLog) Refund(p *algo.Params, s *algo.State, now, cost, at int64) int64 {
	end := len(s.Log)
	for end > 0 && s.Log[end-1] > at {
		end--
	}
	start := end
	for start > 0 && s.Log[start-1] == at && int64(end-start) < cost {
		start--
	}
	if start == end {
		return ttlOfLog(p, s, now)
	}
	s.Log = append(s.Log[:start:start], s.Log[end:]...) // a new array: the old state stays whole
	return ttlOfLog(p, s, now)
}

// ttlOfLog is how long a log matters: until its newest unit leaves the window.
func ttlOfLog(p *algo.Params, s *algo.State, now int64) int64 {
	if len(s.Log) == 0 {
		return 0
	}
	return s.Log[len(s.Log)-1] + p.Window - now
}
