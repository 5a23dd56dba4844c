// Package httpspec is the HTTP behaviour every entry point of ratelimit must share: one table
// of requests and the exact responses they get, run through net/http ([ratelimit.Middleware])
// and through the Gin, Echo and Fiber adapters.
//
// A framework's test supplies a [NewServer] that builds an application with the routes below
// and returns a [Server]; [Run] drives it through every case with a fake clock, so no test
// sleeps, over a store of its own: the memory store, or one of every [Engine] the test names
// (net/http runs the table against Redis and Redis Cluster too). A few cases bring their own
// store, one that fails or does not answer.
//
// Routes (the path syntax is the framework's own):
//
//	GET  /items/{id}   the limit of Config.Options only (the framework-wide middleware)
//	GET  /health       the same
//	POST /login        Config.Options, then, when Config.Login is not nil, a per-route limit
//	                   with the options Config.Login, in the framework's per-route idiom
//
// Every route's handler calls [Config.Reply] with its context and the request's raw query
// string (report=N reports a cost of N with cost.Report) and answers
// the status it returns, with Content-Type "text/plain; charset=utf-8" and the body "ok".
// When Reply reports asError, a framework whose handlers return errors (Echo, Fiber) answers
// by returning its HTTP error of that status instead; the others write the status.
//
// When [Config.Auth] is set, an authentication middleware runs before the limiter's, as in a
// typical application (see [Config]).
//
// The client address is the [http.Request.RemoteAddr] of the request the runner sends; a
// framework whose test transport drops it (Fiber's app.Test) must carry it over to the
// connection's remote address.
package httpspec

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/cost"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// Config is what a [NewServer] builds an application from.
type Config struct {
	// Limiter is the limiter of every middleware of the application.
	Limiter *ratelimit.Limiter
	// Options configure the middleware in front of every route.
	Options []ratelimit.Option
	// Login, when not nil, configures a second middleware on POST /login only.
	Login []ratelimit.Option
	// Reply is the application handler: call it with the context the framework hands a
	// handler (its request's: where cost.Report finds the request's meter) and the request's
	// raw query string.
	Reply func(ctx context.Context, rawQuery string) (status int, asError bool)
	// Auth, when set, asks for an authentication middleware in front of the limiter, as a
	// typical application has: when the request has an X-User header, it stores the header's
	// value under [UserKey] the framework's way — Gin's and Echo's c.Set, Fiber's c.Locals,
	// net/http's request context (context.WithValue) — and otherwise stores nothing.
	Auth bool
}

// UserKey is the key under which the authentication middleware of [Config.Auth] stores the
// user.
const UserKey = "user"

// Server serves one request through the application and returns the complete response.
type Server func(*http.Request) *http.Response

// NewServer builds an application from c; it fails t when it cannot.
type NewServer func(t *testing.T, c Config) Server

// T0 is the fake clock's start: a whole hour, so every window the cases use starts at T0.
var T0 = fakeclock.T0

// Engine is a kind of store the cases run against.
type Engine struct {
	// Name names the engine's subtests.
	Name string
	// Store returns an empty store of the engine for test t that runs on clock (see
	// [ratelimit.WithClock]): the limiters of one case share it.
	Store func(t *testing.T, clock ratelimit.Clock) ratelimit.Store
}

// Memory is the memory store, the engine [Run] uses when given none.
var Memory = Engine{Name: "memory", Store: func(_ *testing.T, clock ratelimit.Clock) ratelimit.Store {
	return ratelimit.NewMemoryStore(ratelimit.WithClock(clock))
}}

// env is the world of one case: the clock, the store, the errors reported, the shaping
// waits, and the calls of the handler.
type env struct {
	clock *fakeclock.Clock
	store ratelimit.Store
	calls atomic.Int64

	mu         sync.Mutex
	errs       []error // reported to the error handler
	waits      []time.Duration
	cancelWait bool // the next shaping wait ends as if the client went away
	told       Told // the results told of the case's requests
}

// newEnv returns the world of case c in test t: c's own store, or else an empty store of
// engine.
func newEnv(t *testing.T, c specCase, engine Engine) *env {
	e := &env{clock: fakeclock.New(T0)}
	store := c.store
	if store == nil {
		store = engine.Store(t, specClock{e})
	}
	e.store = Observed(store, e.told.Observer()) // every step must be told once: see step.checkTold
	return e
}

// Told records the result of each request its guards answer, and nothing else: what a case
// holds to one result a request. Its Observer sets the Answered hook alone.
type Told struct {
	mu      sync.Mutex
	results []observe.Result
	once    sync.Once
	hooks   *ratelimit.Observer
}

// Results returns the results told so far.
func (o *Told) Results() []observe.Result {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.results)
}

// Observer returns the hooks that record into o: the same pointer each time, so that the
// guards of one request over stores observed by o count it once.
func (o *Told) Observer() *ratelimit.Observer {
	o.once.Do(func() {
		o.hooks = &ratelimit.Observer{Answered: func(e observe.RequestEvent) {
			o.mu.Lock()
			o.results = append(o.results, e.Result)
			o.mu.Unlock()
		}}
	})
	return o.hooks
}

// Observed returns store with o as its observer (the first of its chain, see
// ratelimit.Store), which every limiter and guard over it then reports to.
func Observed(store ratelimit.Store, o *ratelimit.Observer) ratelimit.Store {
	return observedStore{store, o}
}

type observedStore struct {
	ratelimit.Store
	o *ratelimit.Observer
}

func (s observedStore) Unwrap() ratelimit.Store       { return s.Store }
func (s observedStore) PassesHolds() bool             { return true } // it adds an observer alone
func (s observedStore) Observer() *ratelimit.Observer { return s.o }

// specClock is the case's clock as the store sees it: the fake clock, whose shaping waits the
// case records.
type specClock struct{ e *env }

func (c specClock) Now() time.Time { return c.e.clock.Now() }

func (c specClock) Sleep(ctx context.Context, d time.Duration) error { return c.e.wait(ctx, d) }

// base are the options every middleware of a case starts with, before the case's own: an
// error handler that records, and the store deadline timeout, or else one no store of a test
// misses on a busy machine (a minute).
func (e *env) base(timeout time.Duration) []ratelimit.Option {
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

// reported returns the errors reported so far.
func (e *env) reported() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.errs)
}

// wait is the shaping wait: it records d and returns at once.
func (e *env) wait(ctx context.Context, d time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waits = append(e.waits, d)
	if e.cancelWait {
		e.cancelWait = false
		return context.Canceled
	}
	return ctx.Err()
}

// reply is the application handler: ?status=N answers N, ?error=N answers N through the
// framework's error path; the default is 200.
func (e *env) reply(ctx context.Context, rawQuery string) (int, bool) {
	e.calls.Add(1)
	q, _ := url.ParseQuery(rawQuery)
	for _, v := range q["report"] { // the handler reports what the request cost (ChargeAfter)
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && !cost.Report(ctx, n) {
			panic("httpspec: cost.Report found no meter in the handler's context")
		}
	}
	if s, err := strconv.Atoi(q.Get("error")); err == nil {
		return s, true
	}
	if s, err := strconv.Atoi(q.Get("status")); err == nil {
		return s, false
	}
	return http.StatusOK, false
}

// limiter returns a limiter of the policies over the case's store.
func (e *env) limiter(policies ...ratelimit.Policy) *ratelimit.Limiter {
	l, err := ratelimit.New(e.store, policies...)
	if err != nil {
		panic(err)
	}
	return l
}

// epoch returns the Unix time T0+sec as a header value.
func epoch(sec int64) string { return strconv.FormatInt(T0.Unix()+sec, 10) }

// brokenStore fails every call.
type brokenStore struct{}

var errStoreDown error = storeDown{}

// storeDown is the error of a store that cannot be reached, naming its kind as a store written
// outside the core does (see observe.ErrorKind).
type storeDown struct{}

func (storeDown) Error() string     { return "httpspec: the store is down" }
func (storeDown) ErrorKind() string { return "unavailable" }

func (brokenStore) Check(context.Context, string, []ratelimit.Policy, int64, bool, []ratelimit.PolicyResult) (time.Time, error) {
	return time.Time{}, errStoreDown
}

func (brokenStore) Reset(context.Context, string, []ratelimit.Policy) error { return errStoreDown }
func (brokenStore) Refund(context.Context, string, []ratelimit.Policy, int64, time.Time) error {
	return errStoreDown
}

// slowStore answers only when the call's context ends, as a store that stopped responding.
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
