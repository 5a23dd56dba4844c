package simulate

import (
	"slices"
	"time"
)

// Admitted returns how many requests the limiter admitted.
func (t Trace) Admitted() int {
	n := 0
	for _, r := range t.Requests {
		if r.Allowed {
			n++
		}
	}
	return n
}

// Refused returns how many requests the limiter refused.
func (t Trace) Refused() int { return len(t.Requests) - t.Admitted() }

// AdmittedAt returns the arrival times of the admitted requests, in order.
func (t Trace) AdmittedAt() []time.Duration {
	var at []time.Duration
	for _, r := range t.Requests {
		if r.Allowed {
			at = append(at, r.At)
		}
	}
	return at
}

// ReleasedAt returns when the admitted requests proceed: their arrival plus their Delay, in
// order. Without shaping that is when they arrive.
func (t Trace) ReleasedAt() []time.Duration {
	var at []time.Duration
	for _, r := range t.Requests {
		if r.Allowed {
			at = append(at, r.At+r.Delay)
		}
	}
	slices.Sort(at)
	return at
}

// MostWithin returns the most of the sorted times that fall in any half-open interval of
// length d: for the admitted times and d = Window, the most a policy of Limit per Window let
// through in any Window.
func MostWithin(sorted []time.Duration, d time.Duration) int {
	most, first := 0, 0
	for last, t := range sorted {
		for sorted[first] <= t-d {
			first++
		}
		most = max(most, last-first+1)
	}
	return most
}

// PerBucket counts the times in each bucket of width w from 0 to length: bucket i holds
// [i×w, (i+1)×w).
func PerBucket(times []time.Duration, w, length time.Duration) []int {
	n := int((length + w - 1) / w)
	counts := make([]int, n)
	for _, t := range times {
		if i := int(t / w); t >= 0 && i < n {
			counts[i]++
		}
	}
	return counts
}
