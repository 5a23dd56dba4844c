package ratelimit

import (
	"context"
	"net/http"
	"net/textproto"
	"strings"
)

// Request is the view of an HTTP request that key functions and the [Guard] read. Every
// framework supplies one cheaply: net/http through [HTTPRequest], the adapters through their
// own small types (Fiber's without building an *http.Request).
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
	// client sent.
	Header(name string) string
	// RemoteAddr returns the address of the connection's peer, "ip:port".
	RemoteAddr() string
}

// HTTPRequest returns r as a [Request], without allocating. Route is r.Pattern, which
// net/http sets when a ServeMux routes the request: it is known to a middleware on a handler
// registered on the mux, not to one that wraps the whole mux.
func HTTPRequest(r *http.Request) Request { return httpRequest{r} }

// httpRequest is *http.Request seen as a Request. A struct of one pointer is stored in an
// interface as the pointer itself, so the conversion does not allocate.
type httpRequest struct{ r *http.Request }

func (h httpRequest) Context() context.Context { return h.r.Context() }
func (h httpRequest) Method() string           { return h.r.Method }
func (h httpRequest) Route() string            { return h.r.Pattern }
func (h httpRequest) RemoteAddr() string       { return h.r.RemoteAddr }

func (h httpRequest) Path() string {
	if h.r.URL == nil {
		return ""
	}
	return h.r.URL.Path
}

func (h httpRequest) Header(name string) string {
	v := h.r.Header[textproto.CanonicalMIMEHeaderKey(name)]
	switch len(v) {
	case 0:
		return ""
	case 1:
		return v[0]
	}
	return strings.Join(v, ", ")
}
