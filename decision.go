package ratelimit

import (
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/algo"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// Decision is the outcome of checking a request against a limiter's policies.
//
// Limit, Remaining and ResetAfter describe the binding policy: the denying policy with the
// longest wait, or, when the request is allowed, the policy with the least remaining.
//
// The [Guard] hands the decision of every request it lets through to the handler: see
// [DecisionFrom], and the framework adapters' Decision functions.
type Decision struct {
	// Allowed reports whether every policy admitted the request. It was charged only then.
	Allowed bool
	// Source is what decided: the store, or while it was unavailable the local fallback, or
	// for an identity the store had denied, the denial cache, or for a hot identity a quota
	// lease this instance holds (Policy.Lease).
	Source observe.Source
	// Limit is the binding policy's capacity: its Burst for the bucket algorithms, else its
	// Limit.
	Limit int64
	// Remaining is how many more requests of cost 1 the binding policy would admit now.
	Remaining int64
	// ResetAfter is the time until the binding policy is fully reset.
	ResetAfter time.Duration
	// RetryAfter is the time until this request's cost would be admitted by every policy: 0 when
	// allowed, [algorithms.Never] when its cost exceeds a policy's capacity.
	RetryAfter time.Duration
	// Delay is how long the request must wait for its slot before it proceeds (leaky bucket
	// shaping); 0 otherwise.
	Delay time.Duration
	// EffectiveWindow is the longest time within which the binding policy admits no more than
	// Remaining (see PolicyResult.EffectiveWindow).
	EffectiveWindow time.Duration
	// Policy is the binding policy.
	Policy Policy
	// Cost is what the request was charged: its cost, or for [Limiter.Reserve] the estimate
	// held; 0 when nothing was (denied, a peek).
	Cost int64

	results [4]PolicyResult
	more    []PolicyResult
	n       int
	at      time.Time // when, on the store's clock
	held    time.Time // when its in-flight slots were taken or last renewed; zero: it holds none
	hold    *hold     // what Reserve holds until Settle; nil: a plain check
}

// overflowed reports whether d was decided on a memory store's overflow quota.
func (d *Decision) overflowed() bool {
	r := d.policyResults()
	return len(r) > 0 && r[0].overflow
}

// holds reports whether the decision holds in-flight slots ([algorithms.InFlight]): the request
// was admitted by a limiter with an in-flight policy, and its slots are taken until
// [Limiter.Settle] (the [Guard] settles when the handler returns).
func (d *Decision) holds() bool { return !d.held.IsZero() }

// PolicyResult is one policy's own verdict on a request.
type PolicyResult struct {
	// Policy is the policy.
	Policy Policy
	// Allowed reports whether this policy admitted the request.
	Allowed bool
	source  observe.Source // set by the layers in front of a store (beside Allowed: one word)
	// overflow reports a decision of a memory store at its bound on a shard's overflow quota:
	// what it charged is given back there (see onOverflow).
	overflow bool
	// Remaining is how many more requests of cost 1 this policy would admit now.
	Remaining int64
	// ResetAfter is the time until this policy is fully reset.
	ResetAfter time.Duration
	// RetryAfter is the time until this policy would admit the request's cost (0 when it
	// allowed it, [algorithms.Never] when it never will).
	RetryAfter time.Duration
	// Delay is the wait for the request's slot under a shaping policy.
	Delay time.Duration

	// EffectiveWindow is the longest time within which this policy admits no more than
	// Remaining: were Remaining spent now, one unit more would fit after it. It is the t of the
	// IETF RateLimit field (draft -11; see [Response]). 0 for in-flight slots, which
	// come back when requests end, not with time.
	EffectiveWindow time.Duration
}

// Results returns every policy's result, in the limiter's policy order.
func (d Decision) Results() []PolicyResult { return d.policyResults() }

// policyResults is Results without copying the Decision, which Results' value receiver
// does: the library's own calls take it, on the path of every request (see reserveInto).
func (d *Decision) policyResults() []PolicyResult {
	if d.more != nil {
		return d.more
	}
	return d.results[:d.n]
}

func micros(us int64) time.Duration {
	if us == algo.Never {
		return algorithms.Never
	}
	return time.Duration(us) * time.Microsecond
}

// set fills in r's verdict from an algorithm's result.
func (r *PolicyResult) set(a *algo.Result) {
	r.setMicros(a.Allowed, a.Remaining, a.ResetAfter, a.RetryAfter, a.Delay, a.Next)
}

// neverAllowed makes r the verdict on a cost above the policy's capacity.
func (r *PolicyResult) neverAllowed() {
	r.Allowed, r.RetryAfter, r.Delay = false, algorithms.Never, 0
}

// setMicros fills in r's verdict from microseconds (RetryAfter -1: never).
func (r *PolicyResult) setMicros(allowed bool, remaining, resetAfter, retryAfter, delay, next int64) {
	r.Allowed, r.Remaining = allowed, remaining
	r.ResetAfter, r.RetryAfter, r.Delay, r.EffectiveWindow = micros(resetAfter), micros(retryAfter), micros(delay), micros(next)
}

// longer reports whether retry a waits longer than b, algorithms.Never being the longest.
func longer(a, b time.Duration) bool {
	if a == algorithms.Never || b == algorithms.Never {
		return a == algorithms.Never && b != algorithms.Never
	}
	return a > b
}

// decide makes d, which must be the zero Decision, the decision of every policy's result,
// checked at time at. It fills d in place: a Decision is several hundred bytes, and building
// one to return would copy it.
func (d *Decision) decide(policies []Policy, raw []PolicyResult, at time.Time) {
	d.Allowed, d.n, d.at = true, len(policies), at
	if len(raw) > 0 {
		d.Source = raw[0].source
	}
	var results []PolicyResult
	if len(policies) > len(d.results) {
		d.more = make([]PolicyResult, len(policies))
		results = d.more
	} else {
		results = d.results[:len(policies)]
	}
	bind := -1
	for i := range raw {
		pr := &results[i]
		*pr = raw[i]
		pr.Policy = policies[i]
		switch {
		case pr.Policy.Shadow: // reported, never deciding
		case !pr.Allowed:
			if d.Allowed || longer(pr.RetryAfter, d.RetryAfter) {
				bind, d.RetryAfter = i, pr.RetryAfter
			}
			d.Allowed = false
		case d.Allowed:
			d.Delay = max(d.Delay, pr.Delay)
			if bind < 0 || pr.Remaining < raw[bind].Remaining {
				bind = i
			}
		}
	}
	if !d.Allowed {
		d.Delay = 0
	}
	if bind >= 0 {
		p := &policies[bind]
		d.Policy, d.Limit, d.Remaining, d.ResetAfter = *p, p.capacity(), raw[bind].Remaining, raw[bind].ResetAfter
		d.EffectiveWindow = raw[bind].EffectiveWindow
	}
}
