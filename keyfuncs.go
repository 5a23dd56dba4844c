package ratelimit

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/textproto"
	"reflect"
	"strconv"
	"strings"
)

// KeyFunc returns the identity a request is limited by: every request with the same key
// shares one quota. It returns an error wrapping [ErrNoKey] when the request has no such
// identity (no API key header, an anonymous user), and another error when the request is
// malformed, which the guard answers 400 ([ErrBadRequest]). A KeyFunc must not keep the Request
// after it returns.
//
// The built-in key functions put their kind before the value ("ip:", "hdr:x-api-key:",
// "user:", "route:"), so keys of different kinds never collide: an API key that reads like an
// IP address does not share that address's quota.
type KeyFunc func(Request) (string, error)

// maxKeyBytes is the longest request data a key function reads, and the longest key the
// guard accepts; longer is a bad key ([ErrBadRequest]). Data longer than 256 bytes is replaced in
// the key by its SHA-256 digest, so keys stay short even when joined.
const maxKeyBytes = 4096

// maxKeyPart is the longest request data a key keeps as it is.
const maxKeyPart = 256

// boundedKey returns kind + value, with value replaced by '#' and its digest when it is
// longer than maxKeyPart bytes or starts with '#' (so a value cannot pose as a digest).
func boundedKey(kind, value, what string) (string, error) {
	switch {
	case len(value) > maxKeyBytes:
		return "", fmt.Errorf("%s is %d bytes, more than %d", what, len(value), maxKeyBytes)
	case len(value) > maxKeyPart || strings.HasPrefix(value, "#"):
		sum := sha256.Sum256([]byte(value))
		b := make([]byte, 0, len(kind)+1+base64.RawURLEncoding.EncodedLen(len(sum)))
		b = append(append(b, kind...), '#')
		return string(base64.RawURLEncoding.AppendEncode(b, sum[:])), nil
	}
	return kind + value, nil
}

// KeyByHeader keys requests by the value of the named request header, e.g. "X-API-Key", as
// "hdr:x-api-key:<value>". A request without the header, or with an empty one, has no key
// ([ErrNoKey]). Values longer than 256 bytes are replaced by their SHA-256 digest; values
// longer than 4096 bytes are an error.
//
// A value containing a comma is malformed, and an error (not ErrNoKey): the [Guard] answers
// 400 Bad Request and reports it. A request may carry the header on several field lines, and
// [Request.Header] joins them with ", "; an application that reads the first line
// (http.Header.Get) would accept "X-API-Key: valid" followed by "X-API-Key: junk1", while a
// key of the joined value would give each new second line a new quota. Identity headers (API
// keys, tokens, user and tenant ids) never hold a comma, so no single valid value is refused.
//
// Only use a header that your own code or a proxy you control sets or verifies: a client can
// send any value, and a new value is a new quota. An API key that your handlers reject is
// such a header; key by it with Access.MissingKey ([WithAccess]), and limit the failures with a second
// middleware keyed by IP.
//
// KeyByHeader panics if name is not a valid header name.
func KeyByHeader(name string) KeyFunc {
	if !validHeaderName(name) {
		panic(fmt.Sprintf("ratelimit: KeyByHeader(%q): not a valid header name", name))
	}
	canonical := textproto.CanonicalMIMEHeaderKey(name)
	kind := "hdr:" + strings.ToLower(name) + ":"
	what := "header " + canonical
	return func(r Request) (string, error) {
		v := r.Header(canonical)
		if v == "" {
			return "", errNoHeader
		}
		if len(v) <= maxKeyBytes && strings.IndexByte(v, ',') >= 0 {
			// The value is a secret, often: say nothing of it.
			return "", fmt.Errorf("ratelimit: %s has a comma: the header is repeated, or its value is not an identity", what)
		}
		return boundedKey(kind, v, what)
	}
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// KeyByUser keys requests by the authenticated user, as "user:<id>": the value your
// authentication middleware (which must run before the rate limiter) stored under key — with
// Gin's or Echo's c.Set, Fiber's c.Locals, or in the request's context on net/http
// ([Request.Value] reads them all):
//
//	r.Use(auth) // c.Set("user", id)
//	r.Use(ginlimit.New(limiter, ratelimit.WithKey(ratelimit.KeyByUser("user")), ratelimit.WithAccess(ratelimit.Access{MissingKey: 401})))
//
// The value may be a string, a []byte, an integer (named types such as `type UserID string`
// included) or a [fmt.Stringer]. A request without one
// (or with an empty one, or a nil pointer) is anonymous: it has no key ([ErrNoKey]). A value of another type is
// an error naming it (the request is answered 400 and the error reported): store the id itself,
// or write a [KeyFunc] that reads it from your type. Ids longer than 256 bytes are replaced by
// their SHA-256 digest.
//
// KeyByUser panics if key is nil.
func KeyByUser(key any) KeyFunc {
	if key == nil {
		panic("ratelimit: KeyByUser(nil): give it the key under which the user's id is stored")
	}
	return func(r Request) (string, error) {
		var id string
		switch v := r.Value(key).(type) {
		case nil:
		case string:
			id = v
		case []byte:
			id = string(v)
		case int:
			id = strconv.FormatInt(int64(v), 10)
		case int64:
			id = strconv.FormatInt(v, 10)
		case int32:
			id = strconv.FormatInt(int64(v), 10)
		case uint:
			id = strconv.FormatUint(uint64(v), 10)
		case uint64:
			id = strconv.FormatUint(v, 10)
		case uint32:
			id = strconv.FormatUint(uint64(v), 10)
		case fmt.Stringer:
			if !isNilPointer(v) { // (*User)(nil) for an anonymous request: its String would panic
				id = v.String()
			}
		default:
			var ok bool
			if id, ok = idOfKind(v); !ok {
				return "", fmt.Errorf("ratelimit: KeyByUser: the value under %v is a %T, not a string, integer or fmt.Stringer", key, v)
			}
		}
		if id == "" {
			return "", errNoUser
		}
		return boundedKey("user:", id, "user id")
	}
}

// isNilPointer reports whether v is a nil pointer of some type: a user an authentication
// middleware stored as none.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// idOfKind returns the id held by a value of a named string or integer type (type UserID
// string), which the type switch of KeyByUser does not match.
func idOfKind(v any) (string, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return rv.String(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10), true
	}
	return "", false
}

// KeyByRoute keys requests by their matched route pattern, as "route:/items/{id}": one quota
// per route, shared by all clients and by every method the route answers. Join it with a client
// key to get one quota per client and route, and with [KeyByMethod] for one per method too:
//
//	ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute())
//	ratelimit.KeyJoin(ratelimit.KeyByIP(), ratelimit.KeyByRoute(), ratelimit.KeyByMethod())
//
// The route is the pattern, never the raw path, so a client cannot mint new quotas by varying
// the path — nor by varying the method on a route that answers several. A net/http pattern's
// method is left out ("GET /x" is keyed as "/x", its host kept), so a route's quota is the same
// in net/http, Gin, Echo and Fiber, whose route templates have no method.
//
// A request whose route is unknown has no key ([ErrNoKey]). With net/http the route is known
// inside a ServeMux, and by middleware that wraps the mux itself (it asks the mux: see
// [FromGuard]). Otherwise every request is limited by its
// client IP instead (see [WithKey]), which the guard logs once and counts
// ([Observer.KeyFellBack]).
func KeyByRoute() KeyFunc {
	return func(r Request) (string, error) {
		route := r.Route()
		if i := strings.IndexByte(route, ' '); i >= 0 && !strings.HasPrefix(route, "/") {
			route = strings.TrimLeft(route[i:], " \t") // "GET /x" or "GET example.com/x"
		}
		switch {
		case route == "":
			return "", errNoRoute
		case len(route) > maxKeyPart:
			return boundedKey("route:", route, "route")
		}
		return "route:" + route, nil
	}
}

// KeyByMethod keys requests by their method, as "method:GET": join it with [KeyByRoute] for one
// quota per route and method. The nine methods of RFC 9110 (with PATCH) are keyed as they are
// and every other counts as one, "OTHER", so a client cannot mint new quotas with invented
// methods.
func KeyByMethod() KeyFunc {
	return func(r Request) (string, error) {
		return methodKey(r.Method()), nil
	}
}

// methodKey returns "method:" and m when m is one of the methods of RFC 9110 (and PATCH), else
// "method:OTHER". Every key is a constant, so none is built for a request.
func methodKey(m string) string {
	switch m {
	case "GET":
		return "method:GET"
	case "HEAD":
		return "method:HEAD"
	case "POST":
		return "method:POST"
	case "PUT":
		return "method:PUT"
	case "PATCH":
		return "method:PATCH"
	case "DELETE":
		return "method:DELETE"
	case "OPTIONS":
		return "method:OPTIONS"
	case "TRACE":
		return "method:TRACE"
	case "CONNECT":
		return "method:CONNECT"
	}
	return "method:OTHER"
}

// KeyJoin keys requests by several keys at once, e.g. the client IP and the route. The parts
// are joined unambiguously, each prefixed with its length ("12:ip:192.0.2.1|8:route:/x"),
// so ("a:b", "c") and ("a", "b:c") are different keys. A request missing any part has no key
// ([ErrNoKey]); any other error is returned as it is.
//
// KeyJoin panics if it is given no function or a nil one.
func KeyJoin(fns ...KeyFunc) KeyFunc {
	checkKeyFuncs("KeyJoin", fns)
	fns = append([]KeyFunc(nil), fns...)
	return func(r Request) (string, error) {
		var buf [256]byte
		b := buf[:0]
		for i, fn := range fns {
			part, err := fn(r)
			if err != nil {
				return "", err
			}
			if i > 0 {
				b = append(b, '|')
			}
			b = strconv.AppendInt(b, int64(len(part)), 10)
			b = append(b, ':')
			b = append(b, part...)
		}
		return string(b), nil
	}
}

// KeyOr keys requests by the first of fns that finds a key: KeyOr(KeyByHeader("X-API-Key"),
// KeyByIP()) limits clients by API key and anonymous ones by IP. A function's error other
// than [ErrNoKey] is returned at once; when none finds a key, the result is ErrNoKey.
//
// KeyOr panics if it is given no function or a nil one.
func KeyOr(fns ...KeyFunc) KeyFunc {
	checkKeyFuncs("KeyOr", fns)
	fns = append([]KeyFunc(nil), fns...)
	return func(r Request) (string, error) {
		var none error
		for _, fn := range fns {
			key, err := fn(r)
			if !errors.Is(err, ErrNoKey) {
				return key, err
			}
			none = err // the last one's reason
		}
		return "", none
	}
}

func checkKeyFuncs(name string, fns []KeyFunc) {
	if len(fns) == 0 {
		panic("ratelimit: " + name + "(): give it at least one key function")
	}
	for i, fn := range fns {
		if fn == nil {
			panic(fmt.Sprintf("ratelimit: %s: key function %d is nil", name, i+1))
		}
	}
}
