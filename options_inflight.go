package ratelimit

import "time"

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
