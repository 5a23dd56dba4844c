// Package cost carries what a request cost when that is known only after its handler ran:
// the tokens of a completion, the bytes of a response, a charge that depends on the status.
//
// A guard configured with ratelimit.ChargeAfter admits each request against an estimate (its
// ratelimit.WithCost), holding it, and when the response has been sent charges what the
// function given to ChargeAfter makes of the request's [After]: the status, the bytes written,
// and what the handler reported with [Report]:
//
//	func completion(w http.ResponseWriter, r *http.Request) {
//		resp := model.Complete(r.Context(), prompt)
//		cost.Report(r.Context(), resp.Usage.TotalTokens)
//		...
//	}
//
// It imports nothing of the limiter, so that a handler, a model client or a library can report
// costs without depending on it: [Report] on a context that no guard metered does nothing.
package cost
