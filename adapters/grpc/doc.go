// Package grpclimit rate-limits gRPC servers with [github.com/a7d3e0dd/ratelimit]: the same
// guard as [ratelimit.Middleware] — skip, key, cost, the store call under its deadline, the
// fail mode, in-flight slots, shaping — as unary and stream server interceptors.
//
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(limiter)),
//		grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(limiter)),
//	)
//
// Options are the core's ([ratelimit.Option]). [FromGuard] makes both interceptors from one
// guard. A handler reads the limiter's decision with [Decision].
//
// # The call as a request
//
// Key functions, skip and cost functions see a call as a [ratelimit.Request]:
//
//   - Route and Path are the full method, "/pkg.Service/Method", so [ratelimit.KeyByRoute]
//     gives each method its quota; Method is "POST", the HTTP/2 method of every call.
//   - Header reads the incoming metadata, whose keys are lower-case: KeyByHeader("X-API-Key")
//     ([ratelimit.KeyByHeader]) reads x-api-key; several values are joined by ", ", as several field
//     lines of an HTTP header are. Header("Host") is the call's :authority.
//   - RemoteAddr is the peer's address ([google.golang.org/grpc/peer.FromContext]).
//   - Value is the call's context value, so an authentication interceptor chained before the
//     limiter stores the caller with context.WithValue and [ratelimit.KeyByUser] reads it.
//
// The client IP ([ratelimit.KeyByIP], and the fallback key when a key function finds none)
// follows the same rules as over HTTP: the peer, unless it is a proxy named by
// [ratelimit.TrustProxies], whose x-forwarded-for (or the header it names) metadata is then
// read from the right. A client's own x-forwarded-for is never read.
//
// # Status codes
//
// A call the guard refuses does not reach its handler. It fails with these codes:
//
//	denied by the limiter (HTTP 429)            ResourceExhausted, with RetryInfo and pushback
//	a cost above a policy's capacity            ResourceExhausted, pushback -1 (do not retry)
//	store failed, Response{FailClosed: 503}     Unavailable, with RetryInfo and pushback (1 s)
//	store failed, Response{FailClosed: 429}     ResourceExhausted, with RetryInfo and pushback (1 s)
//	no key, Access{MissingKey: 401}             Unauthenticated
//	no key, Access{MissingKey: 403}             PermissionDenied
//	no key, MissingKey 404 / 409 / 429          NotFound / Aborted / ResourceExhausted (no RetryInfo: no retry brings a key)
//	no key, MissingKey another 4xx              InvalidArgument
//	unreadable key or negative cost (HTTP 400)  InvalidArgument
//	client went away while waiting (HTTP 499)   Canceled
//
// Every denial is ResourceExhausted, the code gRPC has for an exhausted quota, also with
// a [ratelimit.Response] InFlightStatus or Deny status; a deny response's body is the status
// message. The message is the body an HTTP client would get, without its final newline
// (Response.ProblemJSON makes it a JSON document).
//
// A delay to retry after is sent twice: as a google.rpc.RetryInfo detail of the status
// ([google.golang.org/genproto/googleapis/rpc/errdetails.RetryInfo]) and as the trailer
// grpc-retry-pushback-ms ([PushbackKey]) of gRFC A6, which a client's retry policy obeys. It
// is the limiter's exact wait rounded up to the millisecond, never longer than the
// Retry-After an HTTP client gets for the same denial (whole seconds): the wait for an
// in-flight slot is at most a second, since a slot comes back whenever a call ends.
//
// # Metadata
//
// Every call the limiter decided, admitted or refused, gets the rate-limit fields of the
// guard's [ratelimit.Response] as header metadata with lower-case keys: x-ratelimit-limit,
// x-ratelimit-remaining and x-ratelimit-reset by default; ratelimit-policy and ratelimit with
// its IETFDraft; x-ratelimit-shadow with its Shadow; and
// retry-after (seconds) on a refusal with a delay. A client reads them with grpc.Header (a
// unary call) or ClientStream.Header. Two limiting interceptors on one call each add their
// fields, so a key then has two values, the outer interceptor's first; over HTTP the inner
// middleware's headers replace the outer's. The call is one request to the store's observer,
// told once with the result its client got (see [ratelimit.Request]), when the handler
// returns or at the refusal. For a stricter limit on some methods, prefer one
// interceptor whose guard picks the policies by method (a [ratelimit.Resolver] of Tiers or
// [ratelimit.Switch] on Request.Route).
//
// # Streams
//
// A stream is checked once, when it starts, for its cost (one call by default); the messages
// it carries are not counted. Under an in-flight policy ([github.com/a7d3e0dd/ratelimit/algorithms.InFlight]) the stream
// holds its slot until its handler returns, also when the handler panics.
//
// # Completion and CountIf
//
// When the handler returns, the interceptor completes the call ([ratelimit.Guard.Done]) with
// the HTTP status of the code it returned ([HTTPStatus]): [ratelimit.CountIf] sees HTTP
// statuses, 401 for Unauthenticated, 200 for OK, and so on.
//
// # Tracing
//
// The interceptors record nothing on a span: a refusal is a returned status, and the guard
// reports only store and request errors to its error handler, never a denial. OpenTelemetry's
// gRPC instrumentation (otelgrpc) follows the semantic conventions for RPC servers, which set
// a server span's status to Error only for Unknown, DeadlineExceeded, Unimplemented, Internal,
// Unavailable and DataLoss: a denial (ResourceExhausted), a missing key (Unauthenticated) or a
// bad key (InvalidArgument) leaves the span unset, while fail-closed's Unavailable marks it,
// as a server fault should. Instrumentation that marks ResourceExhausted as an error does so
// after the interceptor returns, where no interceptor can undo it: change the status in that
// instrumentation's own configuration or in a span processor.
package grpclimit
