package ratelimit

import (
	"net/http"

	"github.com/a7d3e0dd/ratelimit/cost"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// Outcome is what a [Guard] decided about one request, and what to answer. When Proceed is
// set, write the headers ([Outcome.Headers]) and call the next handler, then report its status
// to [Guard.Done]; otherwise answer Status with the headers, ContentType and Body.
type Outcome struct {
	// Proceed reports whether the request goes on to the next handler.
	Proceed bool
	// Status is the status to answer when the request does not proceed: 429 when the limiter
	// denied it (or the Response.Deny status); the Response.FailClosed status when the store
	// failed; the Access.MissingKey status when it had no key; 400 when its key could not be
	// read (a malformed proxy header, say) or its cost is negative; 499 when its client went
	// away while the guard waited.
	Status int
	// ContentType is the media type of Body.
	ContentType string
	// Body is the response body when the request does not proceed. It may be shared between
	// outcomes: do not modify it.
	Body []byte
	// Decision is the limiter's decision. It is the zero Decision (Limit 0) when the limiter
	// did not decide: the request was skipped, had no usable key, or the store failed.
	Decision Decision
	// Result is what the client got, as the guard's [Observer] counts it: allowed, denied,
	// unlimited (the store failed, the request proceeded without a limit), decided by the local
	// fallback, refused because the store failed, rejected, canceled or skipped.
	Result observe.Result
	// Err is the error that kept the limiter from deciding: a store error or timeout, or a key
	// function's error, already reported to the error handler; or the request's context ending
	// (not reported: a client going away is no fault).
	Err error

	// Pending reports whether [Guard.Done] needs the handler's status to complete the outcome:
	// the request proceeded and holds in-flight slots, or the guard counts by outcome
	// ([CountIf]). (A request that carries outcomes between guards, see [Request], has Done
	// called in any case, to tell the observer of it.) A framework
	// that turns a handler's error into a response only after the middleware returns (Echo,
	// Fiber) has the error answered first when Pending is set, so that Done gets the status
	// the client sees.
	Pending bool

	style headerStyle // rate-limit headers to write; none unless the limiter decided
	// report is 1 while the report of a request that proceeded waits for the next guard or
	// Done (event, observer: see nested.go), and is taken with an atomic swap: the guards of
	// requests a handler serves on goroutines of its own with its request's context find it
	// too. (Beside Pending and style: the three take one word.)
	report uint32

	// Meter is set when the guard charges the request after its response ([ChargeAfter]):
	// the handler's context must carry it ([cost.NewContext]) for [cost.Report] to reach
	// it, and the bytes of the response body are counted with its Wrote. The core's
	// middleware and the framework adapters do both.
	Meter *cost.Meter

	resetAt  int64  // X-RateLimit-Reset: Unix seconds
	resetIn  int64  // RateLimit t: seconds
	retry    int64  // Retry-After seconds; 0 for none
	policies string // RateLimit-Policy
	shadow   string // X-RateLimit-Shadow: the shadow policies that denied

	// What Guard.Done needs to refund the charge or release the slots.
	req     Request
	key     string
	guard   *Guard    // the guard that decided
	limiter *Limiter  // whose policies decided
	slots   *slotHold // renews the slots the request holds; nil: none
	// ip reads the client IP of the request for a guard inside that has no client-IP option
	// of its own (see Guard.ipOf); nil: the connection's peer.
	ip *ipResolver

	// The report that waits (see report). While the guard checks, its Waited is how long the
	// request waited for an in-flight slot or for its turn under a shaping policy, 0 for one
	// that did not wait.
	event    observe.RequestEvent
	observer *Observer
}

// Write writes the outcome to w: its headers, and the whole response when the request does
// not proceed. When it proceeds, call the next handler after Write.
func (o *Outcome) Write(w http.ResponseWriter) {
	h := w.Header()
	if o.Proceed {
		o.writeHeaders(h, nil, nil)
		return
	}
	// One array for every header of the refusal: the rate-limit headers, then those of its body.
	vals := new([numFields + 2]string)
	o.writeHeaders(h, vals[:numFields], nil)
	if o.ContentType != "" {
		vals[numFields], vals[numFields+1] = o.ContentType, "nosniff"
		h["Content-Type"] = vals[numFields : numFields+1 : numFields+1]
		h["X-Content-Type-Options"] = vals[numFields+1:]
	}
	w.WriteHeader(o.Status)
	_, _ = w.Write(o.Body) // the client's connection failing is not ours to report
}
