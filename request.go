package ratelimit

import (
	"context"
	"net/http"
	"net/textproto"
	"strings"
)

// Request is the view of an HTTP request that key functions and the [Guard] read. Every
// framework supplies one cheaply: the net/http middleware its own, the adapters their small
// types (Fiber's without building an *http.Request).
type Request interface {
	// Context returns the request's context.
	Context() context.Context
	// Method returns the request method, e.g. "GET".
	Method() string
	// Path returns the URL path.
	Path() string
	// Route returns the route pattern the router matched, e.g. "GET /items/{id}", or "" when
	// it is not known (see [KeyByRoute]).
	Route() string
	// Header returns every field line of the named header joined by ", " (the combination
	// RFC 9110 §5.3 allows), or "" when the header is absent. Joining rather than taking the
	// first line matters for X-Forwarded-For: a proxy may append its own line after one the
	// client sent. Header("Host") returns the request's host, which net/http keeps apart from
	// the other headers (the :authority of HTTP/2).
	Header(name string) string
	// RemoteAddr returns the address of the connection's peer, "ip:port".
	RemoteAddr() string
	// Value returns the value stored under key by the middleware before the limiter — Gin's
	// and Echo's c.Set (string keys), Fiber's c.Locals — or else the request context's value
	// for key (net/http: r.Context().Value), or nil.
	Value(key any) any
}

// A Request whose router matches routes on another form of the path than Path also has the
// method
//
//	EscapedPath() string
//
// returning the path as the router matches it: as the client escaped it (url.URL.EscapedPath:
// "/search/x%2Fy", whose Path is "/search/x/y") for net/http's ServeMux and Echo; for Fiber,
// as it compares paths by default, in lower case and without a trailing slash ("/login" for
// "/LOGIN/"). What picks a limit by the route a request will take (the rules engine's
// patterns) matches on it, as the router does: without it, a client could reach a route no
// limit matches by escaping a slash, or changing the case. The core's net/http requests and
// the Echo and Fiber adapters' have it. A Request whose router compares paths in lower case,
// its routes' too (Fiber by default), also has the method
//
//	FoldsCase() bool
//
// returning true: the rules engine then matches its patterns with their paths in lower case
// ("GET /api/getUser/{id}" is the route of "/api/getuser/bob" there).
//
// A Request that carries, from one guard to the next, the outcome of the last guard that let
// it through has the method
//
//	OuterOutcome() *Outcome
//
// returning that outcome (nil before the first guard; the guard then looks in the request's
// context, where net/http's [Middleware] keeps its own, so that net/http middleware around a
// framework's engine hands its report over too). Its adapter keeps each outcome where the
// next guard's Request finds it, and calls [Guard.Done] after the next handler returns, whether
// or not the outcome is Pending. The guards of such a request tell their [Observer] of it once,
// with the result its client got, however many guards it passes (the middleware around every
// route, then a route's own): a guard that lets it through leaves the report to the next one or
// to Done. The core's net/http requests and every adapter's have it; a Request without it is
// told of by each guard it passes.

// httpRequest is *http.Request seen as a Request. A struct of one pointer is stored in an
// interface as the pointer itself, so the conversion does not allocate. Route is r.Pattern,
// which net/http sets when a ServeMux routes the request: it is known to a middleware on a
// handler registered on the mux, not to one that wraps the whole mux.
type httpRequest struct{ r *http.Request }

func (h httpRequest) Context() context.Context { return h.r.Context() }
func (h httpRequest) Method() string           { return h.r.Method }
func (h httpRequest) Route() string            { return h.r.Pattern }
func (h httpRequest) RemoteAddr() string       { return h.r.RemoteAddr }
func (h httpRequest) Value(key any) any        { return h.r.Context().Value(key) }

// OuterOutcome returns nil: the outcome of the guard before is in the request's context, where
// the guard looks for it (see [Request]).
func (h httpRequest) OuterOutcome() *Outcome { return nil }

func (h httpRequest) Path() string {
	if h.r.URL == nil {
		return ""
	}
	return h.r.URL.Path
}

// EscapedPath returns the path as the client escaped it (see [Request]).
func (h httpRequest) EscapedPath() string {
	if h.r.URL == nil {
		return ""
	}
	return h.r.URL.EscapedPath()
}

func (h httpRequest) Header(name string) string {
	name = textproto.CanonicalMIMEHeaderKey(name)
	if name == "Host" {
		return h.r.Host // net/http moves it out of the header map
	}
	v := h.r.Header[name]
	switch len(v) {
	case 0:
		return ""
	case 1:
		return v[0]
	}
	return strings.Join(v, ", ")
}

// guardRequest is a request as a guard's key functions see it: with the guard's client-IP
// resolver, which [KeyByIP] reads.
type guardRequest struct {
	Request
	ip *ipResolver
}
