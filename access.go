package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"

	"github.com/a7d3e0dd/ratelimit/internal/prefixset"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// Access names the requests a guard never limits and those it refuses outright, for
// [WithAccess]: by the client's network, by the key the guard's key function finds, and by a
// function of your own (Skip: health checks, say).
//
//	ratelimit.WithAccess(ratelimit.Access{
//		Allow: []string{"10.0.0.0/8", "2001:db8:aa::/48"}, // our offices and health checks
//		Deny:  []string{"203.0.113.0/24"},                // an abusive range
//	})
//
// Deny wins: a request that any deny entry matches is refused, whether or not an allow entry
// matches too. Then a request that an allow entry matches proceeds unlimited. The lists are
// read before anything else, Skip included: a denied client is refused on every route. With
// Deny networks set, a request whose client IP cannot be read (a forwarding header from a
// trusted proxy that does not parse, or is too long) is refused as a bad request, its error
// reported: it could be a denied client's. Neither asks the
// store anything: an allowed request over Redis costs what a check of the memory store costs,
// and a flood from a denied range costs Redis nothing. Every other request is limited as the
// guard's options say.
//
// The networks are matched against the client IP as the guard derives it: the connection's
// peer, or the address its trusted proxies name ([TrustProxies]) — never a header that an
// untrusted peer sent. An entry is a CIDR prefix or an address; an IPv6 client is matched by
// its full address, so an entry of /64 covers every address of that /64. The lists are compiled
// when the guard is made (10,000 networks add well under a microsecond to a request).
type Access struct {
	// Allow and Deny list networks: CIDR prefixes ("10.0.0.0/8", "2001:db8::/32") or single
	// addresses ("192.0.2.7"). A network listed twice, however written, is refused.
	Allow, Deny []string
	// AllowKeys and DenyKeys list keys as the guard's key function returns them, such as
	// "hdr:x-api-key:abc123" for KeyByHeader("X-API-Key") or "user:42" for KeyByUser: a
	// request whose key function finds one of them is let through or refused. A request for
	// which it finds no key is matched by networks only. A value that a built-in key function
	// gives as its digest (longer than 256 bytes, or starting with '#') matches as written too:
	// "hdr:x-api-key:<a long token>".
	AllowKeys, DenyKeys []string
	// Status is the status of a denied request: 403 Forbidden by default; a 4xx or a 5xx.
	Status int
	// Body is the text of a denied request's response, after "Forbidden: " (or the status's
	// text), or the detail of its problem document with Response.ProblemJSON. Default: "access from
	// this client is denied."
	Body string
	// Skip exempts the requests for which it reports true (health checks, say), after the
	// lists: they are neither checked nor charged, get no rate-limit headers, and their result
	// is observe.ResultSkipped. It may be all an Access gives; the Skips of several add up.
	Skip func(Request) bool
	// MissingKey, when set, refuses a request whose key function finds no key ([ErrNoKey]: no
	// API-key header, an anonymous user) with this status — 401 Unauthorized, say, or 400 Bad
	// Request; a 4xx — instead of limiting it by its client IP. Its result is
	// observe.ResultRejected. It may be all an Access gives, and is given once.
	MissingKey int
}

// WithAccess gives the guard allow and deny lists, a Skip function and the answer to a request
// without a key (see [Access]). Its requests' results are observe.ResultAllowlisted,
// observe.ResultDenylisted, observe.ResultSkipped and observe.ResultRejected; the first allowed and the first denied are logged, once per guard,
// and each is counted by the metrics modules. The lists (with Status and Body) are given in
// one Access: lists given twice are refused, naming WithAccess, for the second would silently
// replace the first; so is MissingKey given twice. Skip functions add up instead — a request either skips is skipped — so
// an Access of Skip alone sits beside one of lists (a rules engine's lists beside your health
// checks) or beside another Skip.
func WithAccess(a Access) Option {
	return func(gc *guardConfig) {
		lists := len(a.Allow)+len(a.Deny)+len(a.AllowKeys)+len(a.DenyKeys) > 0 || a.Status != 0 || a.Body != ""
		if a.MissingKey != 0 {
			if !gc.once("WithAccess(Access{MissingKey})", "") {
				return
			}
			if a.MissingKey < 400 || a.MissingKey > 499 {
				gc.errorf("WithAccess: MissingKey %d: the status must be a 4xx client error, e.g. 401", a.MissingKey)
				return
			}
			gc.missingStatus = a.MissingKey
		}
		if skip := a.Skip; skip != nil {
			if first := gc.skip; first != nil { // exemptions add up: either skips
				gc.skip = func(r Request) bool { return first(r) || skip(r) }
			} else {
				gc.skip = skip
			}
		}
		if !lists && (a.Skip != nil || a.MissingKey != 0) {
			return // no lists to compile
		}
		if !gc.once("WithAccess", "give every entry in one Access") {
			return
		}
		acc, err := compileAccess(a)
		if err != nil {
			gc.errorf("WithAccess: %w", err)
			return
		}
		gc.access = acc
	}
}

// access is an Access compiled: the networks as sets, the keys as sets.
type access struct {
	allow, deny         *prefixset.Set
	allowKeys, denyKeys map[string]struct{}
	status              int
	body                string
	// logged holds a bit per verdict logged so far (accessAllowed, accessDenied).
	logged atomic.Uint32
}

// The verdicts of the lists on a request.
const (
	accessNone    = iota // limited as usual
	accessAllowed        // proceeds unlimited
	accessDenied         // refused at once
)

func compileAccess(a Access) (*access, error) {
	acc := &access{status: a.Status, body: a.Body}
	if acc.status == 0 {
		acc.status = http.StatusForbidden
	}
	if acc.status < 400 || acc.status > 599 {
		return nil, fmt.Errorf("Status %d: a denied request is answered a 4xx or a 5xx (default 403)", a.Status)
	}
	if acc.body == "" {
		acc.body = "access from this client is denied."
	}
	var err error
	if acc.allow, err = networks("Allow", a.Allow); err != nil {
		return nil, err
	}
	if acc.deny, err = networks("Deny", a.Deny); err != nil {
		return nil, err
	}
	if acc.allowKeys, err = keySet("AllowKeys", a.AllowKeys); err != nil {
		return nil, err
	}
	if acc.denyKeys, err = keySet("DenyKeys", a.DenyKeys); err != nil {
		return nil, err
	}
	for k := range acc.allowKeys {
		if _, both := acc.denyKeys[k]; both {
			return nil, fmt.Errorf("the key %q is in AllowKeys and in DenyKeys: deny would win; list it once", k)
		}
	}
	if acc.allow.Len()+acc.deny.Len()+len(acc.allowKeys)+len(acc.denyKeys) == 0 {
		return nil, errors.New("the Access lists nothing: give it networks or keys to allow or deny, a Skip function or a MissingKey status")
	}
	return acc, nil
}

// networks compiles the list named field.
func networks(field string, list []string) (*prefixset.Set, error) {
	if len(list) == 0 {
		return nil, nil
	}
	entries := make([]prefixset.Entry, 0, len(list))
	for i, s := range list {
		p, err := prefixset.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %q is neither a CIDR prefix (such as 10.0.0.0/8) nor an IP address: %v", field, i, s, err)
		}
		entries = append(entries, prefixset.Entry{Prefix: p, Source: fmt.Sprintf("%s[%d]", field, i)})
	}
	return prefixset.New(entries)
}

// keySet compiles the list of keys named field. A key of a built-in key function's kind whose
// value that function gives as its digest (see boundedKey) is also listed as the function
// returns it, so that it is matched as written: a revoked token longer than 256 bytes, listed
// as "hdr:x-api-key:<token>", is the request's key "hdr:x-api-key:#<digest>".
func keySet(field string, list []string) (map[string]struct{}, error) {
	if len(list) == 0 {
		return nil, nil
	}
	set := make(map[string]struct{}, len(list))
	for i, k := range list {
		switch {
		case k == "":
			return nil, fmt.Errorf("%s[%d] is empty", field, i)
		case len(k) > maxKeyBytes:
			return nil, fmt.Errorf("%s[%d] is %d bytes, more than a key can be (%d)", field, i, len(k), maxKeyBytes)
		}
		if _, dup := set[k]; dup {
			return nil, fmt.Errorf("%s[%d]: %q is listed twice", field, i, k)
		}
		set[k] = struct{}{}
	}
	for _, k := range list {
		if b, ok := boundedForm(k); ok {
			set[b] = struct{}{}
		}
	}
	return set, nil
}

// boundedForm returns key as a built-in key function returns the identity it names, when that
// function would give the identity's value as its digest: for the kinds "hdr:<name>:" (a
// header name holds no ':'), "user:" and "route:".
func boundedForm(key string) (string, bool) {
	kind := ""
	switch {
	case strings.HasPrefix(key, "hdr:"):
		i := strings.IndexByte(key[len("hdr:"):], ':')
		if i < 0 {
			return "", false
		}
		kind = key[:len("hdr:")+i+1]
	case strings.HasPrefix(key, "user:"):
		kind = "user:"
	case strings.HasPrefix(key, "route:"):
		kind = "route:"
	default:
		return "", false
	}
	value := key[len(kind):]
	if len(value) <= maxKeyPart && !strings.HasPrefix(value, "#") {
		return "", false
	}
	b, err := boundedKey(kind, value, "")
	return b, err == nil
}

// keyed is what a guard's key function found for a request, kept so that it runs once.
type keyed struct {
	key  string
	err  error
	done bool
}

// verdict returns what the lists say of r, and which list decided, for the log; or the error
// that keeps the Deny networks from deciding (the client's address cannot be read). It runs
// the key function, into k, only when a key list is set.
func (acc *access) verdict(g *Guard, r Request, res *ipResolver, k *keyed) (int, string, error) {
	var (
		addr  netip.Addr
		haveA bool
	)
	if acc.allow != nil || acc.deny != nil {
		a, err := res.clientIP(r)
		addr, haveA = a, err == nil
		if err != nil && acc.deny != nil {
			// A client whose address cannot be read (a forwarding header the trusted proxy
			// passed on that does not parse, or is too long) may be a denied one: it is
			// refused as a bad request, never let past the Deny networks.
			return accessNone, "", &opError{opKey, ErrBadRequest, err}
		}
	}
	if acc.allowKeys != nil || acc.denyKeys != nil {
		if g.key != nil {
			k.key, k.err = g.key(keyRequest(r, res))
		} else {
			k.key, k.err = res.key(r)
		}
		k.done = true
	}
	found := func(set map[string]struct{}) bool {
		_, ok := set[k.key]
		return ok && k.done && k.err == nil
	}
	switch {
	case haveA && acc.deny.Contains(addr):
		return accessDenied, "Deny", nil
	case found(acc.denyKeys):
		return accessDenied, "DenyKeys", nil
	case haveA && acc.allow.Contains(addr):
		return accessAllowed, "Allow", nil
	case found(acc.allowKeys):
		return accessAllowed, "AllowKeys", nil
	}
	return accessNone, "", nil
}

// logFirst logs the first request of a verdict, once per guard: the lists are configuration,
// and one line says they are in force; the metrics count every request. It names the list
// that matched and the client's address, never a key (an API key is a secret).
func (acc *access) logFirst(g *Guard, r Request, res *ipResolver, verdict int, list string) {
	bit := uint32(1) << verdict
	if acc.logged.Load()&bit != 0 || acc.logged.Or(bit)&bit != 0 {
		return
	}
	attrs := []slog.Attr{slog.String("list", list)}
	if a, err := res.clientIP(r); err == nil {
		attrs = append(attrs, slog.String("client_ip", a.String()))
	}
	msg := "ratelimit: a request of an allowed client proceeds unlimited, without a store call (WithAccess). Logged once per guard; counted every time as allowlisted"
	if verdict == accessDenied {
		msg = "ratelimit: a request of a denied client was refused, without a store call (WithAccess). Logged once per guard; counted every time as denylisted"
		attrs = append(attrs, slog.Int("status", acc.status))
	}
	g.log.get().LogAttrs(context.WithoutCancel(r.Context()), slog.LevelInfo, msg, attrs...)
}

// response is the response to a denied request.
func (acc *access) response(problem bool) response {
	return refusal(acc.status, acc.body, problem)
}

// observe.Result values of the lists' verdicts.
var accessResults = [...]observe.Result{accessAllowed: observe.ResultAllowlisted, accessDenied: observe.ResultDenylisted}
