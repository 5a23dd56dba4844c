package rules

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// Engine applies a rules [Set] to requests, and replaces it while they run: [Engine.Apply]
// with a Set of your own, [Engine.WatchFile] with a file's as it changes, [Engine.WatchRedis]
// with the fleet's rules kept in Redis. Its [Engine.Guard] is a ratelimit guard for every
// framework:
//
//	e, err := rules.Open(ratelimit.NewRedisStore(client), "limits.yaml", rules.WithTier(planOf))
//	go e.WatchFile(ctx, "limits.yaml")
//	http.ListenAndServe(":8080", ratelimit.FromGuard(e.Guard())(mux))
//
// Each request is matched once, against the rules of one version ([Set.Match] with the tier
// that [WithTier] names), and checked by the guard of the rule that matches, with the rule's
// key, cost, fail mode and policies; a request that no rule matches is not limited. A swap is
// atomic: a request sees the old rules or the new, never a mix, and a request under way when
// the rules change completes under the rules it started with. Counts live in the store, keyed
// by identity and policy: a rule whose policy keeps its name, algorithm and window keeps its
// clients' counts across versions, whatever its limit (see ratelimit.StorageKey).
//
// An Engine is safe for concurrent use.
type Engine struct {
	store ratelimit.Store
	opts  options
	guard *ratelimit.Guard

	mu      sync.Mutex // serializes Apply
	current atomic.Pointer[applied]
}

// applied is one version of the rules, ready to check requests.
type applied struct {
	set    *Set
	guards map[*Rule]*ratelimit.Guard
	// unmatched is the guard of the requests no rule matches: the access lists' networks,
	// nothing else; nil when the document lists no network.
	unmatched *ratelimit.Guard
	tiers     map[string]bool // the tiers the rules have
	unknown   unknownTiers    // the tiers of requests that no rule has, logged
}

// Reporter is told of every rules document an Engine applies or refuses, to show the version
// in use in metrics. The observers of the ratelimit prometheus and otel modules implement it.
type Reporter interface {
	// RulesApplied reports that the rules of version are in use.
	RulesApplied(version string)
	// RulesRejected reports a document refused (invalid, unreadable): the last good rules
	// stay in use.
	RulesRejected(err error)
}

// EmptyReporter is a [Reporter] that is also told, after each version applied, whether its
// rules are none (a document of allow_empty: true, which limits no request), so that metrics
// show it: the observers of the prometheus and otel modules implement it
// (ratelimit_rules_empty, ratelimit.rules.empty). An Engine tells it to a Reporter that has
// the method.
type EmptyReporter interface {
	Reporter
	// RulesEmpty reports whether the rules of version, just applied, are none.
	RulesEmpty(version string, empty bool)
}

// WithTier names the tier of each request — the client's plan, from a header your gateway
// sets, a JWT claim, a value your authentication middleware stored — for the rules with a
// tier. Without it every request's tier is "", so a rule with a tier could never apply: an
// Engine without it refuses a document that has one, as it refuses an invalid document.
//
// A request of a tier that no rule has gets the rules without a tier, or none (see
// [Set.Match]); each such tier is logged at warning level, once per version applied (the
// first 16 tiers, then one line that says more are not logged).
func WithTier(tier func(ratelimit.Request) string) Option {
	return engineOption(func(o *options) { o.once("WithTier"); o.tier = tier })
}

// WithGuardOptions gives the guard of every rule these ratelimit options: trusted proxies,
// timeout, error handler and the like. Given twice, it gives them the options of both (each
// option once: the core refuses one given twice, and [NewEngine] refuses one in two
// WithGuardOptions, naming it; but TrustProxies for the same header adds up). A rule's key,
// cost, policies and fail mode are its own, set in the document: [NewEngine] refuses WithKey,
// WithCost and WithPolicies here, with an error naming the rule's field to set, and
// WithResolver, which would choose each request's policies in place of its rule's. It
// refuses ratelimit.WithResponse too, which holds the fail mode (Response.FailClosed): give
// the Response by [WithResponse].
func WithGuardOptions(opts ...ratelimit.Option) Option {
	return engineOption(func(o *options) { o.guard = append(o.guard, opts...) })
}

// WithResponse gives the guard of every rule this ratelimit.Response (see
// ratelimit.WithResponse): the headers it writes and its refusals. Its FailClosed is each
// rule's: 503 for a rule of fail: closed, 0 (fail open) for the others, so [NewEngine]
// refuses a Response whose FailClosed is set.
//
//	rules.WithResponse(ratelimit.Response{IETFDraft: 11, ProblemJSON: true})
func WithResponse(resp ratelimit.Response) Option {
	return engineOption(func(o *options) { o.once("WithResponse"); o.response = &resp })
}

// responseOf returns the ratelimit.WithResponse of a rule's guard: the engine's Response with
// the rule's fail mode, or nil when both are the defaults.
func (o *options) responseOf(failClosed bool) ratelimit.Option {
	var resp ratelimit.Response
	if o.response != nil {
		resp = *o.response
	} else if !failClosed {
		return nil
	}
	if failClosed {
		resp.FailClosed = http.StatusServiceUnavailable
	}
	return ratelimit.WithResponse(resp)
}

// WithLogger sets where an Engine logs the versions it applies and the documents it refuses
// (default slog.Default()). The guards of its rules log where their store does (see
// ratelimit.WithLogger).
func WithLogger(l *slog.Logger) Option {
	return engineOption(func(o *options) { o.once("WithLogger"); o.logger = l })
}

// WithReporter sets the [Reporter] an Engine tells of each version, such as the prometheus
// module's Observer.
func WithReporter(r Reporter) Option {
	return engineOption(func(o *options) { o.once("WithReporter"); o.reporter = r })
}

// NewEngine returns an engine that applies set, over store. The options configure the
// engine, and are given to Parse for the documents its watchers read. It fails when a rule
// cannot make a guard (an invalid option of WithGuardOptions, say), or has a tier and the
// engine no [WithTier], and when WithGuardOptions or WithResponse holds an option that would
// decide for every rule what each rule decides (see [WithGuardOptions], [WithResponse]).
func NewEngine(store ratelimit.Store, set *Set, opts ...Option) (*Engine, error) {
	return newEngine(store, set, collect(opts), "NewEngine")
}

// newEngine is NewEngine with its options collected, of a set read from source (for the log).
func newEngine(store ratelimit.Store, set *Set, o options, source string) (*Engine, error) {
	if store == nil || set == nil {
		return nil, fmt.Errorf("rules: NewEngine needs a store and a Set")
	}
	if err := o.twiceErr(); err != nil {
		return nil, err
	}
	if err := checkGuardOptions(o.guard); err != nil {
		return nil, err
	}
	if o.response != nil && o.response.FailClosed != 0 {
		return nil, fmt.Errorf("rules: WithResponse: Response.FailClosed is %d: %w", o.response.FailClosed, errFailModeIsTheRules)
	}
	e := &Engine{store: store, opts: o}
	if e.opts.logger == nil {
		e.opts.logger = slog.Default()
	}
	a, err := e.compile(set)
	if err != nil {
		return nil, err
	}
	e.current.Store(a)
	e.guard = ratelimit.Switch(e.pick)
	e.applied(set.Version(), "", source)
	return e, nil
}

// Guard returns the guard that checks each request under the rules in use: give it to
// ratelimit.FromGuard, or to the FromGuard of a framework's adapter.
func (e *Engine) Guard() *ratelimit.Guard { return e.guard }

// Set returns the rules in use.
func (e *Engine) Set() *Set { return e.current.Load().set }

// Version returns the version of the rules in use.
func (e *Engine) Version() string { return e.Set().Version() }

// Apply replaces the rules in use with set, atomically. When a rule of set cannot make a
// guard, or has a tier and the engine no [WithTier], it returns the error and the rules in
// use stay.
func (e *Engine) Apply(set *Set) error {
	return e.apply(set, "Apply")
}

// apply applies set, read from source, logging and reporting the outcome.
func (e *Engine) apply(set *Set, source string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if set == nil {
		return e.rejected(source, fmt.Errorf("rules: Apply(nil)"))
	}
	a, err := e.compile(set)
	if err != nil {
		return e.rejected(source, err)
	}
	previous := e.current.Swap(a)
	e.applied(set.Version(), previous.set.Version(), source)
	return nil
}

// applyChanged applies set, read from source, unless it is the version in use and says
// what the rules in use say.
func (e *Engine) applyChanged(set *Set, source string) error {
	if cur := e.Set(); cur.version == set.version && cur.digest == set.digest {
		return nil
	}
	return e.apply(set, source)
}

// applied logs and reports a version put in use.
func (e *Engine) applied(version, previous, source string) {
	n := len(e.current.Load().set.rules)
	args := []any{"version", version, "rules", n}
	if source != "" {
		args = append(args, "source", source)
	}
	if previous != "" {
		args = append(args, "previous", previous)
	}
	if n == 0 {
		// Said so by the document (allow_empty: true; Parse refuses it otherwise), and still
		// the end of limiting: a warning, EmptyReporter's gauge, and Instance.Empty in the
		// fleet for WatchRedis.
		e.opts.logger.Warn("ratelimit rules applied without any rules (allow_empty: true): no request is limited", args...)
	} else {
		e.opts.logger.Info("ratelimit rules applied", args...)
	}
	if e.opts.reporter != nil {
		e.opts.reporter.RulesApplied(version)
	}
	if r, ok := e.opts.reporter.(EmptyReporter); ok {
		r.RulesEmpty(version, n == 0)
	}
}

// rejected logs and reports a document refused, and returns err; attrs are more attributes
// of the log line ("refused" and the version refused, when it is known apart from the
// document: the version logged is the one that stays in use).
func (e *Engine) rejected(source string, err error, attrs ...any) error {
	e.opts.logger.Error("ratelimit rules rejected; the last good rules stay in use",
		append([]any{"source", source, "version", e.Version()}, append(attrs, "error", err)...)...)
	if e.opts.reporter != nil {
		e.opts.reporter.RulesRejected(err)
	}
	return err
}

// compile makes the guard of every rule of set.
func (e *Engine) compile(set *Set) (*applied, error) {
	if e.opts.tier == nil {
		if err := needTier(set); err != nil {
			return nil, err
		}
	}
	a := &applied{set: set, guards: make(map[*Rule]*ratelimit.Guard, len(set.rules)), tiers: tiersOf(set)}
	for i := range set.rules {
		r := &set.rules[i]
		g, err := e.guardOf(set, r)
		if err != nil {
			return nil, fmt.Errorf("rules: version %s, rule %q: %w", set.version, r.Name, err)
		}
		a.guards[r] = g
	}
	if !set.access.empty() {
		g, err := e.unmatchedGuard(set)
		if err != nil {
			return nil, fmt.Errorf("rules: version %s, access: %w", set.version, err)
		}
		a.unmatched = g
	}
	return a, nil
}

// unmatchedGuard makes the guard of the requests that no rule matches when the document has
// access lists: its networks are allowed or refused on every route; the other requests are
// not limited (skipped: it never asks the store).
func (e *Engine) unmatchedGuard(set *Set) (*ratelimit.Guard, error) {
	l, err := ratelimit.New(e.store, ratelimit.Policy{Name: "unmatched", Limit: 1, Window: time.Second})
	if err != nil {
		return nil, err
	}
	a := set.access.core()
	if len(a.Allow)+len(a.Deny) == 0 {
		return nil, nil // clients only: a request no rule matches has no key to compare
	}
	a.Skip = func(ratelimit.Request) bool { return true }
	opts := append(slices.Clip(e.opts.guard), ratelimit.WithAccess(a))
	if resp := e.opts.responseOf(false); resp != nil {
		opts = append(opts, resp) // the refusals of the access lists, as the rules' guards write them
	}
	return ratelimit.NewGuard(l, opts...)
}

// guardOf makes the guard of rule r.
func (e *Engine) guardOf(set *Set, r *Rule) (*ratelimit.Guard, error) {
	l, err := ratelimit.New(e.store, r.Policies...)
	if err != nil {
		return nil, err
	}
	cost := r.Cost
	if r.Settle != "" {
		cost = r.Estimate // held while the request runs, then replaced by what it cost
	}
	opts := append(slices.Clip(e.opts.guard), ratelimit.WithPolicies(r.Policies...), ratelimit.WithKey(r.key),
		ratelimit.WithCost(func(ratelimit.Request) int64 { return cost }))
	if charge := r.SettleFunc(); charge != nil {
		opts = append(opts, ratelimit.ChargeAfter(charge))
	}
	access, overridden, err := set.ruleAccess(r)
	if err != nil {
		return nil, err
	}
	if access != nil {
		opts = append(opts, ratelimit.WithAccess(*access))
	}
	if overridden != nil {
		// The policies of the clients the overrides name, in place of the rule's: the most
		// specific override, chosen when the rules were applied, not per request.
		opts = append(opts, ratelimit.WithResolver(ratelimit.Resolver{Resolve: func(_ ratelimit.Request, key string) ([]ratelimit.Policy, error) {
			return overridden[key], nil
		}}))
	}
	// The engine's guard options hold none of these, nor a WithResponse (checkGuardOptions):
	// the engine's Response, if any, comes here with the rule's fail mode.
	if resp := e.opts.responseOf(r.FailClosed); resp != nil {
		opts = append(opts, resp)
	}
	return ratelimit.NewGuard(l, opts...)
}

// pick returns the guard of the rule that matches r under the rules in use, or nil.
func (e *Engine) pick(r ratelimit.Request) *ratelimit.Guard {
	a := e.current.Load()
	tier := ""
	if e.opts.tier != nil {
		if tier = e.opts.tier(r); tier != "" && !a.tiers[tier] {
			a.unknown.log(e.opts.logger, tier, a.set.version)
		}
	}
	rule, ok := a.set.match(r, tier)
	if !ok {
		return a.unmatched // nil without access lists: not limited
	}
	return a.guards[rule]
}

// match is Match for a request of any framework: the patterns see its method, host and path,
// the path as the client escaped it when the request tells it (see ratelimit.Request), as the
// router matches it: "/search/x%2Fy" is a request of "GET /search/{q}", not of "/search/x/y".
func (s *Set) match(r ratelimit.Request, tier string) (*Rule, bool) {
	var hr *http.Request
	if s.mux != nil {
		u := &url.URL{Path: r.Path()}
		if e, ok := r.(escaped); ok {
			if raw := e.EscapedPath(); raw != u.Path {
				if p, err := url.PathUnescape(raw); err == nil {
					u.Path, u.RawPath = p, raw // what the mux reads (URL.EscapedPath) is raw
				}
			}
		}
		hr = &http.Request{Method: r.Method(), Host: r.Header("Host"), URL: u}
		if f, ok := r.(foldsCase); ok && f.FoldsCase() {
			return s.matchOn(s.fold, s.folded, hr, tier) // the router compares paths in lower case
		}
	}
	return s.Match(hr, tier)
}

// escaped is a ratelimit.Request that tells the path as the client escaped it.
type escaped interface{ EscapedPath() string }

// foldsCase is a ratelimit.Request whose router compares paths in lower case, its routes'
// too (Fiber by default): its EscapedPath is in lower case, and is matched on the patterns
// with their paths in lower case (see Set.indexFolded).
type foldsCase interface{ FoldsCase() bool }
