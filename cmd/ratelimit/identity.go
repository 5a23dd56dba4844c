package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/textproto"
	"slices"
	"strings"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// identityHelp explains, in a command's usage, how a rule's key makes an identity.
const identityHelp = `IDENTITY is the key exactly as the limiter sees it, made by the rule's key:
  ip             ip:192.0.2.1, or for IPv6 the client's /64: ip:2001:db8:1:2::/64
  route          route:/search/{q} (the route pattern, without its method)
  method         method:GET
  api_key        hdr:x-api-key:<value>
  header:X-Name  hdr:x-name:<value>
  user           user:<id>
A value longer than 256 bytes is replaced by '#' and its digest. A key of several parts
joins them, each prefixed with its length: "12:ip:192.0.2.1|17:route:/search/{q}".
Instead of IDENTITY, give each part of the rule's key with -ip, -route, -method, -api-key,
-header and -user: the identity is then made by the rule's own key function. A rule keys
every request by its own pattern: -route must be that pattern, with or without its method
(/search/{q} for GET /search/{q}). (-ip keys an
IPv6 client by its /64, the guard's default; give the IDENTITY if the application sets
another ratelimit.IPv6Prefix.)
`

// partFlags are the flags that give the parts of a rule's key one by one.
type partFlags struct {
	ip, route, method, apiKey, user string
	headers                         headerFlag
}

// addPartFlags defines the part flags on fs.
func addPartFlags(fs *flag.FlagSet) *partFlags {
	p := &partFlags{headers: headerFlag{}}
	fs.StringVar(&p.ip, "ip", "", "the client's `address`, for a key with ip (as the guard resolved it; IPv6 keyed by its /64)")
	fs.StringVar(&p.route, "route", "", "the route `pattern`, for a key with route, such as /search/{q}: a rule's own pattern (with or without its method), by which it keys every request; another is refused")
	fs.StringVar(&p.method, "method", "", "the request `method`, for a key with method")
	fs.StringVar(&p.apiKey, "api-key", "", "the X-API-Key header's `value`, for a key with api_key")
	fs.Var(p.headers, "header", "a header, `\"Name: value\"`, for a key with header:Name (repeat it for several)")
	fs.StringVar(&p.user, "user", "", "the user's `id`, for a key with user")
	return p
}

// headerFlag collects -header flags: canonical name -> value.
type headerFlag map[string]string

func (h headerFlag) String() string { return "" }

func (h headerFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("%q is not \"Name: value\"", s)
	}
	h[textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name))] = strings.TrimSpace(value)
	return nil
}

// apiKeyHeader is the header the key part api_key reads.
var apiKeyHeader = textproto.CanonicalMIMEHeaderKey("X-API-Key")

// values returns the parts given, by the part they are of: ip, route, method, user, and
// header:<Name> for each header (the canonical name), -api-key's too.
func (p *partFlags) values() map[string]string {
	v := map[string]string{}
	for part, value := range map[string]string{"ip": p.ip, "route": p.route, "method": p.method, "user": p.user} {
		if value != "" {
			v[part] = value
		}
	}
	for name, value := range p.headers {
		v["header:"+name] = value
	}
	if p.apiKey != "" {
		v["header:"+apiKeyHeader] = p.apiKey
	}
	return v
}

// given reports whether any part is given.
func (p *partFlags) given() bool { return len(p.values()) > 0 }

// partOf returns the part a key part of a rules file reads, as values names it.
func partOf(spec string) string {
	if spec == "api_key" {
		return "header:" + apiKeyHeader
	}
	if name, ok := strings.CutPrefix(spec, "header:"); ok {
		return "header:" + textproto.CanonicalMIMEHeaderKey(name)
	}
	return spec
}

// flagFor returns the flag that gives a part.
func flagFor(part string) string {
	name, ok := strings.CutPrefix(part, "header:")
	switch {
	case !ok:
		return "-" + part
	case name == apiKeyHeader:
		return "-api-key"
	}
	return fmt.Sprintf("-header %q", name+": value")
}

// identity returns the identity that rule's key function makes of the parts given: a usage
// error when a part of the key is missing, or a part given is not one of the key's.
func (p *partFlags) identity(rule *rules.Rule) (string, error) {
	given := p.values()
	want := map[string]bool{}
	for _, spec := range rule.Key {
		part := partOf(spec)
		if _, ok := given[part]; !ok {
			return "", fmt.Errorf("rule %s is keyed by %v: give %s (or the IDENTITY)", rule.Name, rule.Key, flagFor(part))
		}
		want[part] = true
	}
	for _, part := range slices.Sorted(maps.Keys(given)) {
		if !want[part] {
			return "", fmt.Errorf("rule %s is keyed by %v, not by %s", rule.Name, rule.Key, flagFor(part))
		}
	}
	req := request{method: given["method"], route: given["route"], user: given["user"], headers: map[string]string{}}
	for part, value := range given {
		if name, ok := strings.CutPrefix(part, "header:"); ok {
			req.headers[name] = value
		}
	}
	if ip, ok := given["ip"]; ok {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return "", fmt.Errorf("-ip %q is not an IP address", ip)
		}
		req.remoteAddr = net.JoinHostPort(a.String(), "0")
	}
	if route, ok := given["route"]; ok && rule.Pattern != "" && !sameRoute(route, rule.Pattern) {
		// The rule's key function keys by the rule's own pattern, whatever the request's route:
		// another -route would silently make the identity of the rule's.
		return "", fmt.Errorf("-route %q is not the route of rule %s, which keys every request by its own pattern %q: give -route %q",
			route, rule.Name, rule.Pattern, routeOf(rule.Pattern))
	}
	id, err := rule.KeyFunc()(req)
	if err != nil {
		return "", fmt.Errorf("rule %s makes no identity of these parts: %w", rule.Name, err)
	}
	return id, nil
}

// request is the request that the part flags describe, as a key function reads it.
type request struct {
	method, route, remoteAddr, user string
	headers                         map[string]string // by canonical name
}

func (r request) Context() context.Context  { return context.Background() }
func (r request) Method() string            { return r.method }
func (r request) Path() string              { return "" }
func (r request) Route() string             { return r.route }
func (r request) RemoteAddr() string        { return r.remoteAddr }
func (r request) Header(name string) string { return r.headers[textproto.CanonicalMIMEHeaderKey(name)] }

func (r request) Value(key any) any {
	if key == (userKey{}) && r.user != "" {
		return r.user
	}
	return nil
}

var errNoIdentity = errors.New("give the IDENTITY, or the parts of the rule's key (-ip, -route, -method, -api-key, -header, -user)")

// sameRoute reports whether the route flag and a rule's pattern make the same key part, as
// ratelimit.KeyByRoute makes it: the pattern with or without its method.
func sameRoute(flag, pattern string) bool {
	byRoute := ratelimit.KeyByRoute()
	a, errA := byRoute(request{route: flag})
	b, errB := byRoute(request{route: pattern})
	return errA == nil && errB == nil && a == b
}

// routeOf returns a pattern without its method, as ratelimit.KeyByRoute keys it.
func routeOf(pattern string) string {
	if i := strings.IndexAny(pattern, " \t"); i >= 0 && !strings.HasPrefix(pattern, "/") {
		return strings.TrimLeft(pattern[i:], " \t")
	}
	return pattern
}
