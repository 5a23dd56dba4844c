package observe

import "time"

// Result is what a guard answered one request, named from the client's side: each result is
// one kind of response (see ratelimit.Outcome). Its String is the label the metrics modules
// use.
type Result uint8

const (
	// ResultAllowed: the store (or a quota lease of it) admitted the request; it proceeded with
	// rate-limit headers. (The denial cache only denies.)
	ResultAllowed Result = iota
	// ResultDenied: the limiter denied the request; it was answered 429 (or the
	// Response.Deny or Response.InFlightStatus status) with Retry-After.
	ResultDenied
	// ResultUnlimited: the store failed and the guard failed open without a local fallback:
	// the request proceeded without the guard's limits, and without its rate-limit headers.
	// A request through two guards is unlimited when either failed open; it carries the
	// fields of the other, if that one counted it.
	ResultUnlimited
	// ResultFallbackAllowed: the store failed and the local fallback (ratelimit.WithFallback)
	// admitted the request, under this instance's share of the limits.
	ResultFallbackAllowed
	// ResultFallbackDenied: the store failed and the local fallback denied the request (429).
	ResultFallbackDenied
	// ResultErrorDenied: the store failed and the guard failed closed
	// (ratelimit.Response.FailClosed): the request was refused with that status, whatever a
	// local fallback decided.
	ResultErrorDenied
	// ResultRejected: the request was refused before the guard checked its limits: it carried
	// no key and the guard rejects such requests (ratelimit.Access's MissingKey), or its key or
	// cost could not be used (400). Behind a guard that admitted it, it carries that guard's
	// fields.
	ResultRejected
	// ResultCanceled: the client went away while the guard waited (499).
	ResultCanceled
	// ResultSkipped: ratelimit.Access's Skip exempted the request; it proceeded without rate-limit
	// headers.
	ResultSkipped
	// ResultAllowlisted: an allow list of the guard (ratelimit.WithAccess) matched the
	// request's network or key; it proceeded without rate-limit headers and without a store
	// call.
	ResultAllowlisted
	// ResultDenylisted: a deny list of the guard (ratelimit.WithAccess) matched the request's
	// network or key; it was refused (403 unless the Access says otherwise) without a store
	// call.
	ResultDenylisted

	numResults = iota
)

// String returns the result's label: "allowed", "denied", "unlimited", "fallback_allowed",
// "fallback_denied", "error_denied", "rejected", "canceled", "skipped", "allowlisted" or
// "denylisted".
func (r Result) String() string {
	if int(r) < len(resultNames) {
		return resultNames[r]
	}
	return "unknown"
}

var resultNames = [numResults]string{"allowed", "denied", "unlimited", "fallback_allowed",
	"fallback_denied", "error_denied", "rejected", "canceled", "skipped", "allowlisted", "denylisted"}

// Results returns every result, in the order of their values: what a metrics module
// pre-creates its series from.
func Results() []Result {
	r := make([]Result, numResults)
	for i := range r {
		r[i] = Result(i)
	}
	return r
}

// RequestEvent is what an Observer is told of one request a guard answered. It is passed by
// value, so that reporting allocates nothing.
type RequestEvent struct {
	// Result is what the client got.
	Result Result
	// Waited is how long the guard held the request before it proceeded or was refused: its
	// wait for an in-flight slot (ratelimit.WaitForSlot) or for its slot under a shaping
	// policy, summed over the guards of a request that passed several. 0 for a request that
	// did not wait.
	Waited time.Duration
}
