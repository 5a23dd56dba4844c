package ratelimit

import (
	"net/http"
	"strconv"
	"unicode/utf8"
)

// The guard's own responses: short, actionable, and free of anything internal (no key, no
// store, no policy unless Response.ProblemJSON asks for the names).

const (
	contentTypePlain   = "text/plain; charset=utf-8"
	contentTypeProblem = "application/problem+json"

	// quotaExceeded is the problem type of the IETF rate-limit draft for a denied request.
	quotaExceeded = "https://iana.org/assignments/http-problem-types#quota-exceeded"

	// statusClientClosed is the status (nginx's 499) of a request whose client went away
	// while the guard waited; nobody reads the response, but logs and metrics do, and a 5xx
	// would page someone for nothing.
	statusClientClosed = 499
)

// response is a status, content type and body.
type response struct {
	status      int
	contentType string
	body        []byte
}

// refusal builds a response that does not depend on the request: plain text, or a problem
// document of type about:blank.
func refusal(status int, detail string, problem bool) response {
	title := http.StatusText(status)
	if status == statusClientClosed {
		title = "Client Closed Request"
	}
	if !problem {
		return response{status, contentTypePlain, []byte(title + ": " + detail + "\n")}
	}
	b := appendProblem(nil, "about:blank", title, status, detail)
	return response{status, contentTypeProblem, append(b, "}\n"...)}
}

// prepareResponses builds the refusals that do not depend on the request.
func (g *Guard) prepareResponses() {
	if g.missingStatus != 0 {
		g.missing = refusal(g.missingStatus, "the request does not identify its client.", g.problem)
	}
	g.badRequest = refusal(http.StatusBadRequest, "the request's client could not be identified.", g.problem)
	g.badCost = refusal(http.StatusBadRequest, "the request's cost is invalid.", g.problem)
	g.gone = refusal(statusClientClosed, "the request was cancelled.", g.problem)
	if g.access != nil {
		g.forbidden = g.access.response(g.problem)
	}
	if g.failStatus != 0 {
		detail := "the service is temporarily unavailable. Retry in 1 second."
		if g.failStatus == http.StatusTooManyRequests {
			detail = "Retry in 1 second."
		}
		g.failed = refusal(g.failStatus, detail, g.problem)
	}
	if g.slotStatus != 0 && g.slotStatus != http.StatusTooManyRequests {
		g.busy = busyBody(g.slotStatus, 1, g.problem)
	}
}

// busyBody returns the response to a request refused for want of an in-flight slot with a
// status other than 429 (Response.InFlightStatus 503): the service is busy, which a body that said
// "Too Many Requests" (or a problem document of status 429) would contradict.
func busyBody(status int, retry int64, problem bool) response {
	detail := "too many requests are in progress."
	if retry > 0 {
		detail += " Retry in " + strconv.FormatInt(retry, 10) + " second"
		if retry != 1 {
			detail += "s"
		}
		detail += "."
	}
	return refusal(status, detail, problem)
}

// denied fills in the response to a denied request.
func (g *Guard) denied(r Request, o *Outcome) {
	if g.deny == nil {
		o.Status = http.StatusTooManyRequests
		if g.slotStatus != 0 && o.Decision.Policy.holds() {
			if _, rate := rateDenial(&o.Decision); !rate { // a refusal by a rate policy stays 429
				o.Status = g.slotStatus
			}
		}
		if o.Status != http.StatusTooManyRequests { // the service is busy, not the client too fast
			busy := g.busy
			if o.retry != 1 {
				busy = busyBody(o.Status, o.retry, g.problem)
			}
			o.ContentType, o.Body = busy.contentType, busy.body
			return
		}
		o.ContentType, o.Body = denyBody(&o.Decision, o.retry, g.problem)
		return
	}
	o.Status, o.ContentType, o.Body = g.deny(r, o.Decision)
	if o.Status < 400 || o.Status > 599 {
		o.Status = http.StatusTooManyRequests
	}
}

// denyBody returns the body of a 429 for decision d, whose Retry-After is retry seconds (0
// when the request can never be admitted), in one allocation: a flood of denied requests is
// the guard's hot path. A problem document lists the enforced policies that denied it: a
// shadow policy changes no response (see Policy.Shadow).
func denyBody(d *Decision, retry int64, problem bool) (string, []byte) {
	var buf [96]byte
	detail := appendDenyDetail(buf[:0], retry)
	if !problem {
		const prefix = "Too Many Requests: "
		b := make([]byte, 0, len(prefix)+len(detail)+1)
		b = append(append(append(b, prefix...), detail...), '\n')
		return contentTypePlain, b
	}
	const title = "Request cannot be satisfied as assigned quota has been exceeded"
	// The members' names and punctuation take 71 bytes, each policy's name (a token: nothing
	// to escape) its length and 3. Were the estimate short, append would grow b all the same.
	size := 100 + len(quotaExceeded) + len(title) + len(detail)
	for _, r := range d.policyResults() {
		size += len(r.Policy.Name) + 3
	}
	b := appendProblemHead(make([]byte, 0, size), quotaExceeded, title, http.StatusTooManyRequests)
	// The detail is our own ASCII text, with nothing to escape.
	b = append(append(append(b, '"'), detail...), '"')
	b = append(b, `,"violated-policies":[`...)
	first := true
	for _, r := range d.policyResults() {
		if r.Allowed || r.Policy.Shadow { // a shadow policy never shows in a response
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, r.Policy.Name)
	}
	return contentTypeProblem, append(b, "]}\n"...)
}

// appendDenyDetail appends the sentence of a 429 that says when to retry.
func appendDenyDetail(b []byte, retry int64) []byte {
	if retry == 0 {
		return append(b, "This request costs more than the rate limit allows; it cannot be admitted."...)
	}
	b = append(b, "Rate limit exceeded. Retry in "...)
	b = strconv.AppendInt(b, retry, 10)
	if retry == 1 {
		return append(b, " second."...)
	}
	return append(b, " seconds."...)
}

// appendProblem appends an RFC 9457 problem document without its closing brace.
func appendProblem(b []byte, typ, title string, status int, detail string) []byte {
	return appendJSONString(appendProblemHead(b, typ, title, status), detail)
}

// appendProblemHead appends an RFC 9457 problem document up to the value of its detail.
func appendProblemHead(b []byte, typ, title string, status int) []byte {
	b = append(b, `{"type":`...)
	b = appendJSONString(b, typ)
	b = append(b, `,"title":`...)
	b = appendJSONString(b, title)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	return append(b, `,"detail":`...)
}

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c < utf8.RuneSelf:
			b = append(b, c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			b = utf8.AppendRune(b, r)
			i += size
			continue
		}
		i++
	}
	return append(b, '"')
}
