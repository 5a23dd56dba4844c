package grpclimit

import (
	"context"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/a7d3e0dd/ratelimit"
)

// request is a gRPC call seen as a [ratelimit.Request]:
//
//   - Method is "POST", the HTTP/2 method of every gRPC call;
//   - Path and Route are the full method, "/pkg.Service/Method", with its leading slash even
//     when the call's :path had none (see fullMethod);
//   - Header reads the incoming metadata, whose keys are lower-case: Header("X-API-Key")
//     reads x-api-key, and Header("Host") the call's :authority;
//   - RemoteAddr is the address of the peer ([peer.FromContext]);
//   - Value is the context's value, where an authentication interceptor in front of the
//     limiter stores the caller.
type request struct {
	ctx    context.Context
	method string // the full method
}

func (r *request) Context() context.Context { return r.ctx }
func (r *request) Method() string           { return "POST" }
func (r *request) Path() string             { return r.method }
func (r *request) Route() string            { return r.method }
func (r *request) Value(key any) any        { return r.ctx.Value(key) }

// OuterOutcome returns the outcome of the limiting interceptor before this one on the call, if
// any (see [ratelimit.Request]).
func (r *request) OuterOutcome() *ratelimit.Outcome {
	o, _ := r.ctx.Value(outcomeKey{}).(*ratelimit.Outcome)
	return o
}

// Header returns every value of the named metadata key joined by ", ", as [ratelimit.Request]
// asks of a header sent on several field lines, or "" when the call has none. Binary keys
// ("-bin") hold the decoded bytes, as gRPC hands them to the application.
func (r *request) Header(name string) string {
	key := strings.ToLower(name)
	if key == "host" {
		key = ":authority" // gRPC moves Host there (gRFC A41)
	}
	v := metadata.ValueFromIncomingContext(r.ctx, key)
	switch len(v) {
	case 0:
		return ""
	case 1:
		return v[0]
	}
	return strings.Join(v, ", ")
}

// RemoteAddr returns the address of the call's peer, "ip:port" over TCP, or "" when the
// context has no peer (a call that did not come through a gRPC server).
func (r *request) RemoteAddr() string {
	p, ok := peer.FromContext(r.ctx)
	if !ok || p.Addr == nil {
		return ""
	}
	return p.Addr.String()
}
