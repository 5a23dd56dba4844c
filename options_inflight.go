package ratelimit

import (
	"net/http"
	"time"
)

// WaitForSlot lets a request refused only for want of an in-flight slot
// ([algorithms.InFlight]) wait up to max for one, asking the store again at growing intervals
// (5 ms, doubling to 100 ms), instead of being refused at once. A request refused by a rate
// policy is refused at once, and the wait ends early when the client goes away (499, see
// [Outcome]). It needs an in-flight policy on the guard's limiter.
func WaitForSlot(max time.Duration) Option {
	return func(gc *guardConfig) {
		if !gc.once("WaitForSlot", "") {
			return
		}
		if max <= 0 {
			gc.errorf("WaitForSlot(%v): the wait must be positive", max)
			return
		}
		gc.slotWait = max
	}
}

// InFlightStatus answers status, 503 Service Unavailable or 429 Too Many Requests (the
// default), to a request refused because its in-flight policy has no free slot: 503 says the
// service is busy rather than that the client asks too often. A refusal by a rate policy stays
// 429, with the rate's Retry-After, also when no slot was free either. It needs an in-flight
// policy on the guard's limiter.
func InFlightStatus(status int) Option {
	return func(gc *guardConfig) {
		if !gc.once("InFlightStatus", "") {
			return
		}
		if status != http.StatusServiceUnavailable && status != http.StatusTooManyRequests {
			gc.errorf("InFlightStatus(%d): the status must be 503 or 429", status)
			return
		}
		gc.slotStatus = status
	}
}
