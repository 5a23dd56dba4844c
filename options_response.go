package ratelimit

import "net/http"

// Response shapes what a guard writes of its own: the rate-limit headers of every limited
// response and the refusals (see [WithResponse]), and what it answers when the store fails
// ([Response.FailClosed]). Its zero value is the default: the X-RateLimit headers,
// Retry-After, plain-text refusals with status 429, and failing open.
//
//	ratelimit.WithResponse(ratelimit.Response{IETFDraft: 11, ProblemJSON: true})
type Response struct {
	// NoXRateLimit leaves out the de facto standard headers, written by default:
	// X-RateLimit-Limit (the binding policy's capacity), X-RateLimit-Remaining (requests
	// left) and X-RateLimit-Reset (the Unix time, in seconds rounded up, when the binding
	// policy is fully reset, on the store's clock). Retry-After is written regardless, on
	// every 429 a limit decided and every refusal of a store's failure (a 503, or the 429 of
	// FailClosed): not on a refusal of the access lists or of MissingKey, which no wait ends.
	NoXRateLimit bool

	// IETFDraft adds the fields of the IETF draft "RateLimit header fields for HTTP", as the
	// version of the draft it names defines them; 0 (the default) adds none.
	//
	// 11, the latest version, draft-ietf-httpapi-ratelimit-headers-11: RateLimit-Policy lists
	// every policy as `"name";q=<limit>;w=<window in seconds>`, and RateLimit describes the
	// binding one as `"name";r=<remaining>;t=<effective window>`: within the next t seconds
	// the client can use no more than r, and using r now, one more unit comes after t
	// (Decision.EffectiveWindow, rounded up like Retry-After, so on a denial of cost 1, t
	// equals Retry-After). docs/guard.md maps t for each algorithm. t is left out when the
	// binding policy is an in-flight limit, whose slots come back when requests end.
	//
	// 10, draft-ietf-httpapi-ratelimit-headers-10, for clients that parse that version: the
	// same fields, with t the seconds until the binding policy is fully reset
	// (Decision.ResetAfter, rounded up).
	IETFDraft int

	// Shadow adds X-RateLimit-Shadow, naming the shadow policies (see Policy.Shadow) that
	// would have denied the request, e.g. "strict, burst"; it is absent when none would have.
	// A shadow policy never changes the response otherwise.
	Shadow bool

	// ProblemJSON answers the guard's refusals with an RFC 9457 problem document
	// (application/problem+json) instead of plain text. A denial uses the problem type
	// https://iana.org/assignments/http-problem-types#quota-exceeded of the IETF rate-limit
	// draft and lists the names of the violated policies in "violated-policies" (the enforced
	// ones: a shadow policy never shows in a response). With Deny too, Deny answers the
	// denials, whatever their content type, and the other refusals are problem documents.
	ProblemJSON bool

	// Deny, when set, replaces the response to a request the limiter denies: it returns the
	// status (anything but a 4xx or 5xx means 429), the content type and the body; the guard
	// still writes the rate-limit headers and Retry-After. It is not called for the other
	// refusals (store failure, missing key, malformed request).
	Deny func(r Request, d Decision) (status int, contentType string, body []byte)

	// InFlightStatus answers 503 Service Unavailable, or 429 Too Many Requests (the default),
	// to a request refused because its in-flight policy ([algorithms.InFlight]) has no free
	// slot: 503 says the service is busy rather than that the client asks too often. A
	// refusal by a rate policy stays 429, with the rate's Retry-After, also when no slot was
	// free either. It needs an in-flight policy on the guard's limiter.
	InFlightStatus int

	// FailClosed answers this status, 503 Service Unavailable or 429 Too Many Requests, with
	// Retry-After: 1, when the store fails or does not answer in time (see [WithTimeout]).
	// 0, the default, fails open instead: the request goes through and the error is reported,
	// so an outage of the rate limiter does not become an outage of the service. Fail closed
	// where an unlimited request costs more than a refused one (logins, expensive calls).
	FailClosed int
}

// WithResponse shapes the headers and refusals the guard writes, and whether it fails closed
// (see [Response]); give every field in one WithResponse.
func WithResponse(resp Response) Option {
	return func(gc *guardConfig) {
		if !gc.once("WithResponse", "give every field in one Response") {
			return
		}
		style := xRateLimitHeaders
		if resp.NoXRateLimit {
			style = 0
		}
		switch resp.IETFDraft {
		case 0:
		case 11:
			style |= ietfDraftHeaders
		case 10:
			style |= ietfDraft10Headers
		default:
			gc.errorf("WithResponse: IETFDraft is %d; give 11 (the latest draft), 10, or 0 for none", resp.IETFDraft)
			return
		}
		if resp.Shadow {
			style |= shadowHeaders
		}
		switch resp.InFlightStatus {
		case 0, http.StatusServiceUnavailable, http.StatusTooManyRequests:
		default:
			gc.errorf("WithResponse: InFlightStatus is %d; it must be 503 or 429", resp.InFlightStatus)
			return
		}
		switch resp.FailClosed {
		case 0, http.StatusServiceUnavailable, http.StatusTooManyRequests:
		default:
			gc.errorf("WithResponse: FailClosed is %d; it must be 503 or 429", resp.FailClosed)
			return
		}
		gc.headers, gc.problem, gc.deny, gc.slotStatus = style, resp.ProblemJSON, resp.Deny, resp.InFlightStatus
		gc.failStatus = resp.FailClosed
	}
}
