package ratelimit

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/a7d3e0dd/ratelimit/cost"
)

// Option configures a guard: [Middleware], [NewGuard], the framework adapters' New, and the
// guards of the rules module. An option given twice is refused ([NewGuard] returns an error
// naming it, the others panic), since the second would silently replace the first; but
// [TrustProxies] given twice for the same header trusts the proxies of both. The stores have
// options of their own ([StoreOption]).
type Option func(*guardConfig)

// defaultTimeout bounds every store call of a guard unless WithTimeout says otherwise. A
// variable only so that this package's tests, which must pass on a loaded machine where a
// Redis call can take longer, can lengthen it (see middleware_export_test.go).
var defaultTimeout = 100 * time.Millisecond

// guardConfig is what the guard options set.
type guardConfig struct {
	policies      []Policy
	key           KeyFunc
	missingStatus int // 0: limit a request without a key by its client IP
	cost          func(Request) int64
	failStatus    int // 0: fail open
	timeout       time.Duration
	onError       func(Request, error)
	deny          func(Request, Decision) (int, string, []byte)
	headers       headerStyle
	problem       bool
	skip          func(Request) bool // Access.Skip
	countIf       func(status int) bool
	after         func(cost.After) int64 // ChargeAfter
	ip            ipConfig
	slotWait      time.Duration
	slotStatus    int
	tier          func(Request) string // Resolver.Tier
	tiers         map[string][]Policy
	tierLimiters  map[string]*Limiter
	resolver      *Resolver // Resolver.Resolve
	access        *access   // WithAccess

	errs optionErrors
}

// newGuardConfig applies opts to a guard's defaults and checks them against each other and
// against the limiter, returning the limiter the guard checks.
func newGuardConfig(l *Limiter, opts []Option) (*guardConfig, *Limiter, error) {
	gc := &guardConfig{headers: xRateLimitHeaders, timeout: defaultTimeout, ip: ipConfig{v6bits: 64}}
	for i, o := range opts {
		if o == nil {
			gc.errorf("option %d is nil", i+1)
			continue
		}
		o(gc)
	}
	if gc.policies != nil {
		pl, err := l.with(gc.policies)
		if err != nil {
			gc.errorf("WithPolicies: %w", err)
		} else {
			l = pl
		}
	}
	slots := l.slots
	if err := gc.fits(l); err != nil {
		gc.errorf("%w", err)
	}
	if gc.tiers != nil {
		gc.tierLimiters = make(map[string]*Limiter, len(gc.tiers))
		for _, name := range slices.Sorted(maps.Keys(gc.tiers)) {
			tl, err := l.with(gc.tiers[name])
			if err == nil {
				err = gc.fits(tl)
			}
			if err != nil {
				gc.errorf("WithResolver: tier %q: %w", name, err)
				continue
			}
			gc.tierLimiters[name] = tl
			slots = slots || tl.slots
		}
	}
	if (gc.slotWait > 0 || gc.slotStatus != 0) && !slots && gc.resolver == nil {
		gc.errorf("WaitForSlot and Response.InFlightStatus need an in-flight policy (algorithms.InFlight); the limiter's policies have none")
	}
	if gc.after != nil && gc.countIf != nil {
		gc.errorf("ChargeAfter and CountIf: give one; ChargeAfter charges 0 for a status that does not count")
	}
	if gc.ip.headerSet && len(gc.ip.trusted) == 0 && !gc.ip.unix {
		gc.errorf("TrustProxies(%q): name at least one proxy", gc.ip.header)
	}
	if err := gc.errs.err("ratelimit: NewGuard"); err != nil {
		return nil, nil, err
	}
	return gc, l, nil
}

// fits reports why the guard's options cannot apply to the policies of l, or nil.
func (gc *guardConfig) fits(l *Limiter) error {
	if err := gc.fitsAfter(l); err != nil || gc.countIf == nil {
		return err
	}
	for _, p := range l.policies {
		if p.compiled.model.Shapes() {
			return fmt.Errorf("CountIf cannot be combined with the shaping policy %q: a shaped request's slot is reserved before it runs", p.Name)
		}
	}
	return nil
}

// errorf records an invalid option.
func (gc *guardConfig) errorf(format string, args ...any) { gc.errs.add(format, args...) }

// once records that the option name was given, and reports whether it was the first time; hint
// says how to give in one option what two meant (see optionErrors.once).
func (gc *guardConfig) once(name, hint string) bool { return gc.errs.once(name, hint) }

// WithPolicies replaces the limiter's policies with these, over the limiter's store: the
// per-route limit.
//
//	mux.Handle("POST /login", ratelimit.Middleware(l, ratelimit.WithPolicies(
//		ratelimit.Policy{Name: "login", Limit: 5, Window: time.Minute}))(login))
//
// Policies of different routes that share a name, an algorithm and a window share their quota,
// whatever their limits; name them apart to keep them separate.
func WithPolicies(policies ...Policy) Option {
	return func(gc *guardConfig) {
		if !gc.once("WithPolicies", "give every policy in one WithPolicies") {
			return
		}
		if len(policies) == 0 {
			gc.errorf("WithPolicies(): give it at least one policy")
			return
		}
		gc.policies = append([]Policy(nil), policies...)
	}
}

// WithKey sets what requests are limited by (default [KeyByIP]()). A request for which key
// finds no key ([ErrNoKey]: no API-key header, an anonymous user) is limited by its client IP
// instead, under the same policies and the same trusted proxies, unless Access.MissingKey ([WithAccess])
// refuses it.
func WithKey(key KeyFunc) Option {
	return func(gc *guardConfig) {
		if !gc.once("WithKey", "give one key function (KeyJoin or KeyOr combine several)") {
			return
		}
		if key == nil {
			gc.errorf("WithKey(nil): give it a key function, e.g. ratelimit.KeyByIP()")
			return
		}
		gc.key = key
	}
}

// WithCost sets the cost of each request (default 1): a bulk endpoint can charge for each item,
// a bandwidth limit for each byte. A cost of 0 charges nothing; a cost above a policy's
// capacity, however large, is refused with 429 and no Retry-After, since waiting would not
// help. A negative cost is a malformed request ([ErrBadRequest]): it is answered 400 Bad Request
// without asking the store, whatever the fail mode, and reported.
func WithCost(cost func(Request) int64) Option {
	return func(gc *guardConfig) {
		if !gc.once("WithCost", "") {
			return
		}
		if cost == nil {
			gc.errorf("WithCost(nil): give it a function")
			return
		}
		gc.cost = cost
	}
}

// WithTimeout bounds every store call (default 100 ms); past it, the call counts as failed,
// of kind timeout (see [Response.FailClosed]). A store that answers without I/O (the memory store) is
// not timed. The calls of requests whose context cannot end (as a request made without one)
// share their deadlines, each rounded up to the next 32nd of d (1 ms at most), so that they
// share timers.
func WithTimeout(d time.Duration) Option {
	return func(gc *guardConfig) {
		if !gc.once("WithTimeout", "") {
			return
		}
		if d <= 0 {
			gc.errorf("WithTimeout(%v): the timeout must be positive", d)
			return
		}
		gc.timeout = d
	}
}

// WithErrorHandler sets the function told about every error the guard meets; tell them apart
// with errors.Is: [ErrStore] (the request then fails open or closed, or its refund after the
// handler failed, see [CountIf]; observe.ErrorKind names the kind of failure) or
// [ErrBadRequest] (the request is answered 400 Bad Request). An error that is neither is a
// [Resolver]'s failure (the limiter's own policies decide the request; observe.ErrorKind is
// ""). It is called on the request's goroutine and must be quick.
//
// By default errors are logged with [log/slog] at warning level, at most once a second per
// guard, with the number of errors not logged since.
func WithErrorHandler(f func(r Request, err error)) Option {
	return func(gc *guardConfig) {
		if !gc.once("WithErrorHandler", "give one function that does what both did") {
			return
		}
		if f == nil {
			gc.errorf("WithErrorHandler(nil): give it a function")
			return
		}
		gc.onError = f
	}
}

// CountIf charges only requests whose response status satisfies count: with
// func(s int) bool { return s == 401 }, only failed logins use up the quota.
//
// The guard charges every request before its handler, atomically, as without CountIf, and
// after the handler refunds the charge of a request whose status does not count
// ([Limiter.Settle]). A request in flight holds its charge, so a burst of concurrent failed
// logins cannot get past the limit. A refund gives back only what time has not already given
// back, so nothing is credited twice. X-RateLimit-Remaining counts the request as charged.
// CountIf cannot be combined with a shaping policy, whose slot is reserved before the request
// runs.
func CountIf(count func(status int) bool) Option {
	return func(gc *guardConfig) {
		if !gc.once("CountIf", "give one function that counts what you mean") {
			return
		}
		if count == nil {
			gc.errorf("CountIf(nil): give it a function")
			return
		}
		gc.countIf = count
	}
}
