package ratelimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// headerStyle is a set of rate-limit headers a [Guard] writes (see [Response]).
type headerStyle uint8

const (
	xRateLimitHeaders  headerStyle = 1 << iota // X-RateLimit-*: the default
	ietfDraftHeaders                           // RateLimit, RateLimit-Policy of draft -11
	shadowHeaders                              // X-RateLimit-Shadow
	ietfDraft10Headers                         // RateLimit, RateLimit-Policy of draft -10

	ietfHeaders = ietfDraftHeaders | ietfDraft10Headers
)

// describe fills in what the headers of a decided outcome need.
func (g *Guard) describe(o *Outcome, l *Limiter) {
	d := &o.Decision
	if !d.Allowed {
		o.retry = retrySeconds(d.RetryAfter)
		if d.Policy.holds() && o.retry > 1 {
			// A slot is sure to be free when a lease ends, but comes back as soon as any request
			// in flight ends, which nothing foretells: ask the client to try again soon — or
			// when a rate policy that denied it too admits it, no sooner.
			o.retry = 1
			if wait, ok := rateDenial(d); ok {
				o.retry = retrySeconds(wait)
			}
		}
	}
	o.style = g.headers
	if g.headers&xRateLimitHeaders != 0 {
		o.resetAt = resetEpoch(d.at, d.ResetAfter)
	}
	switch {
	case g.headers&ietfDraftHeaders != 0:
		o.resetIn = ceilSeconds(d.EffectiveWindow) // 0, and no t, for in-flight slots
		o.policies = l.header
	case g.headers&ietfDraft10Headers != 0:
		o.resetIn = ceilSeconds(d.ResetAfter)
		o.policies = l.header
	}
	if g.headers&shadowHeaders != 0 {
		o.shadow = shadowDenials(d)
	}
}

// rateDenial returns the longest wait among the enforced policies that denied d's request
// and are not in-flight limits, and whether there is one: a request refused by a rate policy
// is refused by the rate, even when the lease of an in-flight slot, ending later, binds d.
func rateDenial(d *Decision) (time.Duration, bool) {
	var (
		wait   time.Duration
		denied bool
	)
	for _, r := range d.policyResults() {
		if !r.Allowed && !r.Policy.Shadow && !r.Policy.holds() {
			if !denied || longer(r.RetryAfter, wait) {
				wait = r.RetryAfter
			}
			denied = true
		}
	}
	return wait, denied
}

// shadowDenials lists the shadow policies that denied d's request, or returns "". A single
// name is returned as it is: only a list of several is built.
func shadowDenials(d *Decision) string {
	results := d.policyResults()
	n, first := 0, ""
	for _, r := range results {
		if r.Policy.Shadow && !r.Allowed {
			if n == 0 {
				first = r.Policy.Name
			}
			n++
		}
	}
	if n < 2 {
		return first
	}
	var b strings.Builder
	for _, r := range results {
		if r.Policy.Shadow && !r.Allowed {
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			b.WriteString(r.Policy.Name)
		}
	}
	return b.String()
}

// The headers an Outcome carries, by index: their usual spelling, for Outcome.Headers, and
// their canonical form, the key of an http.Header.
const (
	fieldLimit = iota
	fieldRemaining
	fieldReset
	fieldPolicy
	fieldRateLimit
	fieldRetryAfter
	fieldShadow
	numFields
)

var (
	fieldNames = [numFields]string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
		"RateLimit-Policy", "RateLimit", "Retry-After", "X-RateLimit-Shadow"}
	fieldKeys = [numFields]string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset",
		"Ratelimit-Policy", "Ratelimit", "Retry-After", "X-Ratelimit-Shadow"}
)

// headerValues are the headers of one outcome: fields[i] has value values[i].
type headerValues struct {
	n      int
	fields [numFields]uint8
	values [numFields]string
}

// headerValues formats the outcome's headers. The numbers go into one string, so a response
// costs one allocation for all its header values, or none when they fit in into: the caller's
// buffer, which nothing may write again (its bytes become the strings); nil for none.
func (o *Outcome) headerValues(into []byte) headerValues {
	var (
		hv   headerValues
		buf  [256]byte
		ends [numFields]int
	)
	b := buf[:0]
	add := func(field int) { // inlined: no closure is allocated
		hv.fields[hv.n], ends[hv.n] = uint8(field), len(b)
		hv.n++
	}
	if o.style&xRateLimitHeaders != 0 {
		b = strconv.AppendInt(b, o.Decision.Limit, 10)
		add(fieldLimit)
		b = strconv.AppendInt(b, o.Decision.Remaining, 10)
		add(fieldRemaining)
		b = strconv.AppendInt(b, o.resetAt, 10)
		add(fieldReset)
	}
	if o.style&ietfHeaders != 0 {
		add(fieldPolicy) // static: empty in b
		b = append(b, '"')
		b = append(b, o.Decision.Policy.Name...)
		b = append(b, `";r=`...)
		b = strconv.AppendInt(b, o.Decision.Remaining, 10)
		if o.resetIn > 0 || o.style&ietfDraft10Headers != 0 {
			b = append(b, ";t="...)
			b = strconv.AppendInt(b, o.resetIn, 10)
		}
		add(fieldRateLimit)
	}
	if o.retry > 0 {
		b = strconv.AppendInt(b, o.retry, 10)
		add(fieldRetryAfter)
	}
	if o.shadow != "" {
		add(fieldShadow) // static: empty in b
	}
	var s string
	if len(b) > 0 && len(b) <= cap(into) {
		into = append(into[:0], b...)
		s = unsafe.String(&into[0], len(into))
	} else {
		s = string(b)
	}
	start := 0
	for i := 0; i < hv.n; i++ {
		switch hv.fields[i] {
		case fieldPolicy:
			hv.values[i] = o.policies
		case fieldShadow:
			hv.values[i] = o.shadow
		default:
			hv.values[i] = s[start:ends[i]]
		}
		start = ends[i]
	}
	return hv
}

// Headers calls set(name, value) for every header [Outcome.Write] writes: the rate-limit
// headers the guard's [Response] asks for when the limiter decided, Retry-After on a 429 or 503,
// and, when the request does not proceed, the Content-Type of its body and
// X-Content-Type-Options: nosniff. It is for frameworks whose response is not an
// [net/http.ResponseWriter] (Fiber); the others call Write.
func (o *Outcome) Headers(set func(name, value string)) {
	hv := o.headerValues(nil)
	for i := 0; i < hv.n; i++ {
		set(fieldNames[hv.fields[i]], hv.values[i])
	}
	if !o.Proceed && o.ContentType != "" {
		set("Content-Type", o.ContentType)
		set("X-Content-Type-Options", "nosniff")
	}
}

// writeHeaders sets the outcome's rate-limit headers in h, replacing earlier values. Each
// value is a one-element slice of vals (which has room for numFields), or, when vals is nil,
// of one array made for all of them: the header map holds no slice of its own. The values'
// bytes go into buf where they fit (see headerValues).
func (o *Outcome) writeHeaders(h http.Header, vals []string, buf []byte) {
	hv := o.headerValues(buf)
	if hv.n == 0 {
		return
	}
	if vals == nil {
		vals = make([]string, hv.n)
	}
	for i := 0; i < hv.n; i++ {
		vals[i] = hv.values[i]
		h[fieldKeys[hv.fields[i]]] = vals[i : i+1 : i+1]
	}
}

// policyHeader formats the RateLimit-Policy value of a limiter's policies.
func policyHeader(policies []Policy) string {
	var b strings.Builder
	for _, p := range policies {
		if p.Shadow {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('"')
		b.WriteString(p.Name)
		b.WriteString(`";q=`)
		b.WriteString(strconv.FormatInt(p.Limit, 10))
		if p.holds() { // a cap on requests at once: no window
			b.WriteString(`;qu="concurrent-requests"`)
			continue
		}
		if p.compiled.cal != nil { // a calendar period has no fixed length: no w (docs/calendar.md)
			continue
		}
		b.WriteString(";w=")
		b.WriteString(strconv.FormatInt(ceilSeconds(p.Window), 10))
	}
	return b.String()
}

// ceilSeconds returns d in whole seconds, rounded up; 0 for d <= 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// retrySeconds is the Retry-After of a wait: whole seconds rounded up, at least 1, so a
// client that waits that long is admitted. It is 0, no header, for [algorithms.Never].
func retrySeconds(d time.Duration) int64 {
	if d == algorithms.Never {
		return 0
	}
	return max(1, ceilSeconds(d))
}

// resetEpoch is the Unix time in seconds, rounded up, at which a policy reset after d from now
// is fully reset; now is the time of the check, on the store's clock.
func resetEpoch(now time.Time, d time.Duration) int64 {
	us := now.UnixMicro() + max(d, 0).Microseconds()
	q := us / 1e6
	if us%1e6 > 0 {
		q++
	}
	return q
}
