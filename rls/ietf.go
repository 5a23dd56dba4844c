package rls

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// WithIETFHeaders has every response with a limit carry the fields of the IETF draft
// "RateLimit header fields for HTTP" for Envoy to add to the client's response, as the
// library's guard writes them (ratelimit.Response.IETFDraft), in the version draft names:
//
//   - 11, draft-ietf-httpapi-ratelimit-headers-11: RateLimit-Policy lists every window of the
//     call's descriptors, `"name";q=<requests_per_unit>;w=<unit in seconds>`, and RateLimit
//     describes the window of the descriptor closest to its limit (as WithResponseHeaders
//     chooses it), `"name";r=<limit_remaining>;t=<duration_until_reset>`: the seconds within
//     which it admits no more than r, its effective window (left out when 0).
//   - 10, draft-ietf-httpapi-ratelimit-headers-10: the same, t the seconds until that window
//     is fully reset.
//
// A window's name is its rule's name, else its descriptor's path in the file
// (domain.key_value...), and "override" for a limit the request supplies; the second window
// of a rule and those after it add "-2", "-3"... Shadow and unlimited descriptors are left
// out. A response with no limit carries neither field.
func WithIETFHeaders(draft int) Option {
	return named(func(s *Server) error {
		if draft != 10 && draft != 11 {
			return fmt.Errorf("rls: WithIETFHeaders(%d): give 11 (the latest draft) or 10", draft)
		}
		s.ietf = draft
		return nil
	}, "WithIETFHeaders")
}

// The names of the IETF fields.
const (
	IETFPolicyHeader = "RateLimit-Policy"
	IETFHeader       = "RateLimit"
)

// closestStatus returns the index of the descriptor closest to its limit: the one with the
// least remaining, in order, or the last one over its limit (quota mode aside), as
// envoyproxy/ratelimit chooses it for its headers; -1 when no descriptor has a limit. With
// noShadow, the shadow descriptors are left out.
func closestStatus(statuses []*rlsv3.RateLimitResponse_DescriptorStatus, checks []check, noShadow bool) int {
	closest := -1
	least := uint32(math.MaxUint32)
	for i, st := range statuses {
		if noShadow && checks[i].shadow {
			continue
		}
		if st.CurrentLimit != nil && st.LimitRemaining < least {
			closest, least = i, st.LimitRemaining
		}
		if st.Code == rlsv3.RateLimitResponse_OVER_LIMIT && !checks[i].quota {
			closest, least = i, 0
		}
	}
	return closest
}

// ietfHeaders are the IETF fields of a response (WithIETFHeaders).
func (s *Server) ietfHeaders(statuses []*rlsv3.RateLimitResponse_DescriptorStatus, checks []check) []*core.HeaderValue {
	var policy strings.Builder
	seen := map[string]bool{}
	for i := range checks {
		ch := &checks[i]
		if statuses[i].CurrentLimit == nil || ch.shadow {
			continue
		}
		windows := ch.windows
		if windows == nil {
			windows = []window{{unit: ch.limit.Unit, perUnit: ch.limit.RequestsPerUnit}}
		}
		for j, w := range windows {
			name := windowPolicyName(s.ietfName(ch), j)
			if seen[name] {
				continue
			}
			seen[name] = true
			if policy.Len() > 0 {
				policy.WriteString(", ")
			}
			if w.period != nil {
				// A calendar period has no fixed length (a month of 28 to 31 days): no w, as
				// the library's guard writes a calendar policy (docs/calendar.md).
				fmt.Fprintf(&policy, "%s;q=%d", sfString(name), w.perUnit)
				continue
			}
			d, _ := unitWindow(w.unit)
			fmt.Fprintf(&policy, "%s;q=%d;w=%d", sfString(name), w.perUnit, int64(d/time.Second))
		}
	}
	i := closestStatus(statuses, checks, true)
	if i < 0 || policy.Len() == 0 {
		return nil
	}
	st, ch := statuses[i], &checks[i]
	name := s.ietfName(ch)
	if ch.windows != nil && ch.err == nil {
		name = windowPolicyName(name, ch.d.binding)
	}
	t := st.DurationUntilReset.GetSeconds()
	if s.ietf == 10 && ch.err == nil && (ch.limiter != nil || ch.ref) {
		t = int64(ceilSecond(ch.d.resetAfter) / time.Second)
	}
	rl := sfString(name) + ";r=" + strconv.FormatUint(uint64(st.LimitRemaining), 10)
	if t > 0 || s.ietf == 10 {
		rl += ";t=" + strconv.FormatInt(t, 10)
	}
	return []*core.HeaderValue{{Key: IETFPolicyHeader, Value: policy.String()}, {Key: IETFHeader, Value: rl}}
}

// ietfName is the name of a descriptor's limit in the IETF fields.
func (s *Server) ietfName(ch *check) string {
	switch {
	case ch.rulePath == "":
		return "override"
	case ch.limit.Name != "":
		return ch.limit.Name
	}
	return ch.rulePath
}

// sfString writes s as a structured field string (RFC 9651): quoted, '"' and '\' escaped, and
// each byte it cannot hold (outside the printable ASCII) written '?'.
func sfString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
