package rules

import (
	"fmt"
	"net/textproto"
	"strings"

	"github.com/a7d3e0dd/ratelimit"
)

// apiKeyHeader is the header the key "api_key" reads.
const apiKeyHeader = "X-API-Key"

// keyPart returns the key function of one part of a rule's key, as written in the file, and
// the part's identity (two parts with one identity are the same part: "api_key" and
// "header:x-api-key"). pattern is the rule's match pattern. The error says what is wrong with
// the part.
func keyPart(spec, pattern string, o *options) (ratelimit.KeyFunc, string, error) {
	switch spec {
	case "ip":
		return ratelimit.KeyByIP(), spec, nil
	case "route":
		if pattern == "" {
			return nil, "", fmt.Errorf(`"route" keys by the pattern the rule matched, and the rule has no match.pattern; give it one, or key by something else`)
		}
		return byPattern(pattern), spec, nil
	case "method":
		return ratelimit.KeyByMethod(), spec, nil
	case "api_key":
		return ratelimit.KeyByHeader(apiKeyHeader), partID(spec), nil
	case "user":
		if o.userKey == nil {
			return nil, "", fmt.Errorf(`"user" needs to know where the application stores the user's id: pass rules.WithUserKey to Parse`)
		}
		return ratelimit.KeyByUser(o.userKey), spec, nil
	}
	if name, ok := strings.CutPrefix(spec, "header:"); ok {
		fn, err := keyByHeader(name)
		if err != nil {
			return nil, "", fmt.Errorf("%q: %q is not a header name", spec, name)
		}
		return fn, partID(spec), nil
	}
	return nil, "", fmt.Errorf("unknown key %q; want ip, route, method, user, api_key or header:<Name>", clip(spec))
}

// partID returns the identity of a part of a key as written: the parts that read one header
// ("api_key", "header:x-api-key") have one.
func partID(spec string) string {
	if spec == "api_key" {
		spec = "header:" + apiKeyHeader
	}
	if name, ok := strings.CutPrefix(spec, "header:"); ok {
		return "header:" + textproto.CanonicalMIMEHeaderKey(name)
	}
	return spec
}

// byPattern keys a request by the pattern its rule matched, as ratelimit.KeyByRoute keys it
// by the route its router matched ("route:/search/{q}" for "GET /search/{q}"): the engine
// matches before any router has routed the request, so the request's own route is not known
// yet in front of a ServeMux, and a key must not depend on where the middleware sits.
func byPattern(pattern string) ratelimit.KeyFunc {
	byRoute := ratelimit.KeyByRoute()
	return func(r ratelimit.Request) (string, error) { return byRoute(matched{r, pattern}) }
}

// matched is a request seen with the pattern of the rule that matched it as its route.
type matched struct {
	ratelimit.Request
	pattern string
}

func (m matched) Route() string { return m.pattern }

// keyByHeader is ratelimit.KeyByHeader, which panics on a name that is not a header name:
// the core's own rule decides which names are valid.
func keyByHeader(name string) (fn ratelimit.KeyFunc, err error) {
	defer func() {
		if r := recover(); r != nil {
			fn, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return ratelimit.KeyByHeader(name), nil
}

// joinKeys returns the key function of a rule's parts: the part itself when there is one,
// else ratelimit.KeyJoin of them all, in the order written.
func joinKeys(parts []ratelimit.KeyFunc) ratelimit.KeyFunc {
	if len(parts) == 1 {
		return parts[0]
	}
	return ratelimit.KeyJoin(parts...)
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
