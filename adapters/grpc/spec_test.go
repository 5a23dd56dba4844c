package grpclimit_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/a7d3e0dd/ratelimit"
	grpclimit "github.com/a7d3e0dd/ratelimit/adapters/grpc"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/httpspec"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// The gRPC spec table: the cases of the HTTP spec table (internal/testing/httpspec/cases.go) that
// apply to a gRPC call, with what a gRPC client gets instead of a status, headers and a body:
// a code, header metadata, a message, a RetryInfo detail and the pushback trailer. Every case
// runs through a real gRPC server on loopback, once with unary calls and once with streaming
// calls, on a fake clock, over the memory store and a real Redis (a case with a store of its
// own, one that fails, over that store only). A client calls from any peer address (see
// peerListener).
//
// What differs from HTTP, on purpose: every denial is ResourceExhausted (a Response.Deny
// status does not change it); RetryInfo and the pushback trailer carry the exact wait in
// milliseconds where Retry-After has whole seconds; a cost above the capacity gets pushback
// -1; a refusal has no Content-Type; the route and path are the full method; and two limiting
// interceptors on one call each add their fields (the per-method case).

// specCase is one scenario: how to build the server, and its calls in order.
type specCase struct {
	name  string
	store ratelimit.Store // the case's own store, instead of an empty one of the engine
	// timeout, when set, is the store deadline of the case's interceptors (WithTimeout),
	// instead of a minute, which no store of a test misses on a busy machine.
	timeout time.Duration
	build   func(e *env) config
	steps   []step
}

// config is what a case's server is built from.
type config struct {
	limiter *ratelimit.Limiter
	options []ratelimit.Option
	// login, when not nil, configures a second interceptor, after the first, which limits
	// only Login and LoginStream.
	login []ratelimit.Option
	// auth puts an authentication interceptor in front of the limiter: it stores the x-user
	// metadata, when there is one, under userKey{} in the call's context.
	auth bool
}

// userKey is the context key of the authenticated user.
type userKey struct{}

// step is one call of a case and what it must get.
type step struct {
	advance    time.Duration // moves the clock before the call
	method     string        // Get (default), Health or Login; the streaming twin in stream mode
	remote     string        // the peer; default 192.0.2.1:1234
	authority  string        // default spec.test
	md         []string      // metadata pairs; a repeated key sends several values
	reply      string        // the code the handler answers; default OK
	cancelWait bool          // the shaping wait ends as if the client went away
	want       want
}

// want is what a step's call must get.
type want struct {
	code    codes.Code
	handled bool              // the handler ran
	header  map[string]string // every owned header key, its values joined by ", "
	msg     string            // the status message of a refused call; {method} is the full method
	retry   time.Duration     // the RetryInfo delay; 0: no RetryInfo
	// pushback is the grpc-retry-pushback-ms trailer; "" none. A step with a retry and no
	// pushback wants the retry in milliseconds.
	pushback string
	errs     int    // errors reported to the error handler since the case began
	reported string // a part of the last error this step reported
	kind     string // its kind (observe.ErrorKind)
	waits    []time.Duration
}

// ownedHeaders are the header metadata keys the limiter sends: a call must carry exactly
// those of want.header.
var ownedHeaders = []string{
	"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit-policy",
	"ratelimit", "retry-after", "x-ratelimit-shadow", "x-content-type-options",
}

// TestSpec runs the gRPC spec table.
func TestSpec(t *testing.T) {
	for i, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			for _, c := range specCases() {
				if c.store != nil && i > 0 {
					continue
				}
				for _, m := range modes {
					t.Run(c.name+"/"+m.name, func(t *testing.T) {
						e := &env{clock: fakeclock.New(fakeclock.T0)}
						store := c.store
						if store == nil {
							store = engine.store(t, ratelimit.WithClock(e))
						}
						e.store = httpspec.Observed(store, e.told.Observer()) // every step must be told once
						e.timeout = c.timeout
						runCase(t, e, c.build(e), c.steps, m.stream)
					})
				}
			}
		})
	}
}

// runCase serves cfg and makes the calls of steps.
func runCase(t *testing.T, e *env, cfg config, steps []step, stream bool) {
	t.Helper()
	var (
		unaries []grpc.UnaryServerInterceptor
		streams []grpc.StreamServerInterceptor
	)
	if cfg.auth {
		unaries, streams = append(unaries, authUnary), append(streams, authStream)
	}
	u, s := grpclimit.FromGuard(mustGuard(cfg.limiter, append(e.base(), cfg.options...)...))
	unaries, streams = append(unaries, u), append(streams, s)
	if cfg.login != nil {
		onlyLogin := ratelimit.WithAccess(ratelimit.Access{Skip: func(r ratelimit.Request) bool {
			return !strings.HasPrefix(r.Route(), "/"+service+"/Login")
		}})
		opts := append(append(e.base(), cfg.login...), onlyLogin)
		unaries = append(unaries, grpclimit.UnaryServerInterceptor(cfg.limiter, opts...))
		streams = append(streams, grpclimit.StreamServerInterceptor(cfg.limiter, opts...))
	}
	srv := startServer(t, true, nil, grpc.ChainUnaryInterceptor(unaries...), grpc.ChainStreamInterceptor(streams...))
	for i, s := range steps {
		e.clock.Advance(s.advance)
		e.mu.Lock()
		e.cancelWait = s.cancelWait
		e.mu.Unlock()
		if s.method == "" {
			s.method = "Get"
		}
		if s.remote == "" {
			s.remote = "192.0.2.1:1234"
		}
		calls, errs, told := srv.calls.Load(), len(e.reported()), len(e.told.Results())
		r := call(t, srv.client(t, s.remote, s.authority), s.method, stream, s.reply, s.md...)
		fullMethod := "/" + service + "/" + s.method
		if stream {
			fullMethod += "Stream"
		}
		s.check(t, i+1, r, srv.calls.Load()-calls, e.reported()[errs:], e, fullMethod)
		if got := e.told.Results()[told:]; len(got) != 1 {
			t.Errorf("step %d (%s): the observer was told %v, want one result", i+1, fullMethod, got)
		}
	}
}

// check checks the reply to step n, given how often the handler ran and the errors the step
// reported.
func (s step) check(t *testing.T, n int, r reply, handled int64, reported []error, e *env, fullMethod string) {
	t.Helper()
	w := s.want
	where := "step " + strconv.Itoa(n) + " (" + fullMethod + " from " + s.remote
	for i := 0; i+1 < len(s.md); i += 2 {
		v := s.md[i+1]
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		where += ", " + s.md[i] + ": " + v
	}
	if s.advance != 0 {
		where += ", after " + s.advance.String()
	}
	where += ")"
	if r.code != w.code {
		t.Errorf("%s: code %v (%q), want %v", where, r.code, r.msg, w.code)
	}
	switch {
	case w.handled && handled != 1:
		t.Errorf("%s: the handler ran %d times, want once", where, handled)
	case !w.handled && handled != 0:
		t.Errorf("%s: the handler ran %d times, want never", where, handled)
	}
	for key := range w.header {
		if !slices.Contains(ownedHeaders, key) {
			t.Fatalf("%s: the case names header %q, which is not in ownedHeaders", where, key)
		}
	}
	for _, key := range ownedHeaders {
		got := r.header.Get(key)
		want, ok := w.header[key]
		switch {
		case !ok && len(got) > 0:
			t.Errorf("%s: header %s: %q, want none", where, key, got)
		case ok && strings.Join(got, ", ") != want:
			t.Errorf("%s: header %s: %q, want %q", where, key, got, want)
		}
	}
	if got := r.header.Get("content-type"); len(got) > 1 || len(got) == 1 && !strings.HasPrefix(got[0], "application/grpc") {
		t.Errorf("%s: content-type %q, want gRPC's own", where, got)
	}
	if !w.handled {
		if want := strings.ReplaceAll(w.msg, "{method}", fullMethod); r.msg != want {
			t.Errorf("%s: message %q, want %q", where, r.msg, want)
		}
	}
	switch {
	case w.retry == 0 && r.hasRetry:
		t.Errorf("%s: RetryInfo %v, want none", where, r.retry)
	case w.retry != 0 && (!r.hasRetry || r.retry != w.retry):
		t.Errorf("%s: RetryInfo %v (present: %v), want %v", where, r.retry, r.hasRetry, w.retry)
	}
	pushback := w.pushback
	if pushback == "" && w.retry != 0 {
		pushback = strconv.FormatInt(w.retry.Milliseconds(), 10)
	}
	if got := strings.Join(r.trailer.Get(grpclimit.PushbackKey), ", "); got != pushback {
		t.Errorf("%s: trailer %s %q, want %q", where, grpclimit.PushbackKey, got, pushback)
	}
	if got := len(e.reported()); got != w.errs {
		t.Errorf("%s: %d errors reported so far, want %d (this step's: %v)", where, got, w.errs, reported)
	}
	if w.reported != "" || w.kind != "" {
		switch last := len(reported) - 1; {
		case last < 0:
			t.Errorf("%s: no error reported, want one containing %q", where, w.reported)
		case !strings.Contains(reported[last].Error(), w.reported):
			t.Errorf("%s: reported %q, want an error containing %q", where, reported[last], w.reported)
		case w.kind != "" && observe.ErrorKind(reported[last]) != w.kind:
			t.Errorf("%s: reported %q, want an error of kind %v", where, reported[last], w.kind)
		}
	}
	e.mu.Lock()
	waits := slices.Clone(e.waits)
	e.mu.Unlock()
	if !slices.Equal(waits, w.waits) {
		t.Errorf("%s: shaping waits so far %v, want %v", where, waits, w.waits)
	}
}

// authUnary and authStream are the authentication interceptors of config.auth.
func authUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	return next(authenticate(ctx), req)
}

func authStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, next grpc.StreamHandler) error {
	return next(srv, &ctxStream{ss, authenticate(ss.Context())})
}

func authenticate(ctx context.Context) context.Context {
	if user := metadata.ValueFromIncomingContext(ctx, "x-user"); len(user) == 1 {
		return context.WithValue(ctx, userKey{}, user[0])
	}
	return ctx
}

// ctxStream is a stream with another context.
type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *ctxStream) Context() context.Context { return s.ctx }

// env is the world of one case: the clock, the store, the errors reported and the shaping
// waits. It is the store's clock.
type env struct {
	clock *fakeclock.Clock
	store ratelimit.Store

	mu         sync.Mutex
	errs       []error
	waits      []time.Duration
	cancelWait bool          // the next shaping wait ends as if the client went away
	told       httpspec.Told // the results told of the case's calls
	timeout    time.Duration // the case's store deadline; 0: a minute
}

func (e *env) Now() time.Time { return e.clock.Now() }

// Sleep is the shaping wait: it records d and returns at once.
func (e *env) Sleep(ctx context.Context, d time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waits = append(e.waits, d)
	if e.cancelWait {
		e.cancelWait = false
		return context.Canceled
	}
	return ctx.Err()
}

// base are the options every interceptor of a case starts with: an error handler that
// records, and the case's store deadline, or else one no store of a test misses on a busy
// machine (a minute).
func (e *env) base() []ratelimit.Option {
	timeout := e.timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	return []ratelimit.Option{
		ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) {
			e.mu.Lock()
			e.errs = append(e.errs, err)
			e.mu.Unlock()
		}),
		ratelimit.WithTimeout(timeout),
	}
}

func (e *env) reported() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.errs)
}

// limiter returns a limiter of the policies over the case's store.
func (e *env) limiter(policies ...ratelimit.Policy) *ratelimit.Limiter {
	return mustNew(e.store, policies...)
}

// brokenStore fails every call.
type brokenStore struct{}

// storeDown is the error of a store that cannot be reached, naming its kind.
type storeDown struct{}

func (storeDown) Error() string     { return "test: the store is down" }
func (storeDown) ErrorKind() string { return "unavailable" }

func (brokenStore) Check(context.Context, string, []ratelimit.Policy, int64, bool, []ratelimit.PolicyResult) (time.Time, error) {
	return time.Time{}, storeDown{}
}

func (brokenStore) Reset(context.Context, string, []ratelimit.Policy) error { return storeDown{} }
func (brokenStore) Refund(context.Context, string, []ratelimit.Policy, int64, time.Time) error {
	return storeDown{}
}

// slowStore answers only when the call's context ends.
type slowStore struct{}

func (slowStore) Check(ctx context.Context, _ string, _ []ratelimit.Policy, _ int64, _ bool, _ []ratelimit.PolicyResult) (time.Time, error) {
	<-ctx.Done()
	return time.Time{}, ctx.Err()
}

func (slowStore) Reset(ctx context.Context, _ string, _ []ratelimit.Policy) error {
	<-ctx.Done()
	return ctx.Err()
}

func (slowStore) Refund(ctx context.Context, _ string, _ []ratelimit.Policy, _ int64, _ time.Time) error {
	<-ctx.Done()
	return ctx.Err()
}
