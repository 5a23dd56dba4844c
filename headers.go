package ratelimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HeaderStyle selects the rate-limit headers a [Guard] writes (see [WithHeaders]). Styles
// combine with |.
type HeaderStyle uint8

const (
	// HeadersNone writes no rate-limit headers. Retry-After is still written on 429 and 503.
	HeadersNone HeaderStyle = 0
	// HeadersXRateLimit writes the de facto standard X-RateLimit-Limit (the binding policy's
	// capacity), X-RateLimit-Remaining (requests left) and X-RateLimit-Reset (the Unix time, in
	// seconds rounded up, when the binding policy is fully reset). It is the default.
	HeadersXRateLimit HeaderStyle = 1
	// HeadersIETFDraft writes the fields of the IETF draft "RateLimit header fields for HTTP"
	// (draft-ietf-httpapi-ratelimit-headers-10): RateLimit-Policy lists every policy as
	// `"name";q=<limit>;w=<window in seconds>`, and RateLimit describes the binding one as
	// `"name";r=<remaining>;t=<seconds until reset>`.
	HeadersIETFDraft HeaderStyle = 2
)

// The headers an Outcome carries, by index: their usual spelling, for Outcome.Headers, and
// their canonical form, the key of an http.Header.
const (
	fieldLimit = iota
	fieldRemaining
	fieldReset
	fieldPolicy
	fieldRateLimit
	fieldRetryAfter
	numFields
)

var (
	fieldNames = [numFields]string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
		"RateLimit-Policy", "RateLimit", "Retry-After"}
	fieldKeys = [numFields]string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset",
		"Ratelimit-Policy", "Ratelimit", "Retry-After"}
)

// headerValues are the headers of one outcome: fields[i] has value values[i].
type headerValues struct {
	n      int
	fields [numFields]uint8
	values [numFields]string
}

// headerValues formats the outcome's headers. The numbers go into one string, so a response
// costs one allocation for all its header values.
func (o *Outcome) headerValues() headerValues {
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
	if o.style&HeadersXRateLimit != 0 {
		b = strconv.AppendInt(b, o.Decision.Limit, 10)
		add(fieldLimit)
		b = strconv.AppendInt(b, o.Decision.Remaining, 10)
		add(fieldRemaining)
		b = strconv.AppendInt(b, o.resetAt, 10)
		add(fieldReset)
	}
	if o.style&HeadersIETFDraft != 0 {
		add(fieldPolicy) // static: empty in b
		b = append(b, '"')
		b = append(b, o.binding...)
		b = append(b, `";r=`...)
		b = strconv.AppendInt(b, o.Decision.Remaining, 10)
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, o.resetIn, 10)
		add(fieldRateLimit)
	}
	if o.retry > 0 {
		b = strconv.AppendInt(b, o.retry, 10)
		add(fieldRetryAfter)
	}
	s := string(b)
	start := 0
	for i := 0; i < hv.n; i++ {
		if hv.fields[i] == fieldPolicy {
			hv.values[i] = o.policies
		} else {
			hv.values[i] = s[start:ends[i]]
		}
		start = ends[i]
	}
	return hv
}

// Headers calls set(name, value) for every header the outcome carries: the rate-limit
// headers of the guard's [HeaderStyle] when the limiter decided, and Retry-After on a 429 or
// 503. Framework adapters pass their header setter; net/http code uses [Outcome.Write].
func (o *Outcome) Headers(set func(name, value string)) {
	hv := o.headerValues()
	for i := 0; i < hv.n; i++ {
		set(fieldNames[hv.fields[i]], hv.values[i])
	}
}

// writeHeaders sets the outcome's headers in h, replacing earlier values.
func (o *Outcome) writeHeaders(h http.Header) {
	hv := o.headerValues()
	if hv.n == 0 {
		return
	}
	vals := make([]string, hv.n) // one allocation for every header's slice
	for i := 0; i < hv.n; i++ {
		vals[i] = hv.values[i]
		h[fieldKeys[hv.fields[i]]] = vals[i : i+1 : i+1]
	}
}

// policyHeader formats the RateLimit-Policy value of a limiter's policies.
func policyHeader(policies []Policy, names []string) string {
	var b strings.Builder
	for i, p := range policies {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('"')
		b.WriteString(names[i])
		b.WriteString(`";q=`)
		b.WriteString(strconv.FormatInt(p.Limit, 10))
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
// client that waits that long is admitted. It is 0, no header, for [Never].
func retrySeconds(d time.Duration) int64 {
	if d == Never {
		return 0
	}
	return max(1, ceilSeconds(d))
}

// resetEpoch is the Unix time in seconds, rounded up, at which a policy reset after d from now
// is fully reset.
func resetEpoch(now time.Time, d time.Duration) int64 {
	us := now.UnixMicro() + max(d, 0).Microseconds()
	q := us / 1e6
	if us%1e6 > 0 {
		q++
	}
	return q
}
