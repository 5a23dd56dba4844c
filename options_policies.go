package ratelimit

import (
	"maps"
	"time"
)

// Resolver chooses the policies of each request in place of the limiter's, for
// [WithResolver]: either by tier — the client's plan, such as "free" or "pro" — with Tier and
// Tiers, or from the application's own data — a JWT claim, a database row, a billing plan —
// with Resolve. Give one of the two.
//
//	ratelimit.Middleware(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")),
//		ratelimit.WithResolver(ratelimit.Resolver{Tier: planOf, Tiers: map[string][]ratelimit.Policy{
//			"free": {{Name: "api", Limit: 100, Window: time.Minute}},
//			"pro":  {{Name: "api", Limit: 10000, Window: time.Minute}},
//		}}))
//
// The policies of every tier are validated when the guard is made, and an error names the
// tier. Give the policies of the tiers the same Name, algorithm and Window when a client that
// changes tier should keep its count (see [StorageKey]); give them names apart to count each
// tier afresh. The guard keeps what Resolve returns for a key in a bounded cache, so Resolve is
// asked once per key and TTL, not per request.
type Resolver struct {
	// Tier names the tier of a request (from a header your gateway sets, a JWT claim, a value
	// an authentication middleware stored); a request whose tier is "" or not in Tiers gets
	// the limiter's own policies.
	Tier func(r Request) string
	// Tiers holds the policies of each tier.
	Tiers map[string][]Policy

	// Resolve returns the policies of the client the guard keyed request r by (key is what
	// the guard's key function found, such as "hdr:x-api-key:abc"). Returning no policies and
	// no error gives the client the limiter's own policies. An error is reported to the
	// guard's error handler, and the request gets the limiter's own policies; so does a
	// policy that is not valid. Resolve runs on the request's goroutine, at most once at a
	// time for a key: requests of the same key wait for its answer.
	Resolve func(r Request, key string) ([]Policy, error)
	// TTL is how long an answer is kept (default one minute). A failed resolution is kept one
	// second, or TTL if shorter, so that a failing database is not asked for every request.
	TTL time.Duration
	// Size is how many keys' answers are kept at most (default 10,000); when it is full, the
	// least recently used goes. Each takes about 200 bytes and the key (keys over 64 bytes
	// are kept as their 32-byte digest), so a client cannot make the cache grow beyond it.
	Size int
}

// Defaults of a Resolver.
const (
	defaultResolverTTL  = time.Minute
	defaultResolverSize = 10000
	resolverRetry       = time.Second // how long a failed resolution is kept
)

// WithResolver gives each request the policies that r chooses, in place of the limiter's: the
// policies of its tier, or dynamic limits from the application's own data.
//
//	ratelimit.WithResolver(ratelimit.Resolver{Resolve: func(r ratelimit.Request, key string) ([]ratelimit.Policy, error) {
//		return plans.PoliciesOf(r.Context(), key) // a database row, cached by the guard
//	}})
func WithResolver(r Resolver) Option {
	return func(gc *guardConfig) {
		if !gc.once("WithResolver", "") {
			return
		}
		tiers := r.Tier != nil || r.Tiers != nil
		switch {
		case tiers && r.Resolve != nil:
			gc.errorf("WithResolver: the Resolver has both Tiers and Resolve; give one (Resolve can return a tier's policies)")
		case tiers && r.Tier == nil:
			gc.errorf("WithResolver: the Resolver has Tiers but no Tier function to name the tier of a request")
		case tiers && len(r.Tiers) == 0:
			gc.errorf("WithResolver: the Resolver has a Tier function but no Tiers; give the policies of at least one tier")
		case tiers:
			gc.tier, gc.tiers = r.Tier, maps.Clone(r.Tiers)
		case r.Resolve == nil:
			gc.errorf("WithResolver: the Resolver has no Resolve function (or Tier and Tiers)")
		case r.TTL < 0:
			gc.errorf("WithResolver: the Resolver's TTL is %v; it must be positive (or 0 for a minute)", r.TTL)
		case r.Size < 0:
			gc.errorf("WithResolver: the Resolver's Size is %d; it must be positive (or 0 for 10,000)", r.Size)
		default:
			if r.TTL == 0 {
				r.TTL = defaultResolverTTL
			}
			if r.Size == 0 {
				r.Size = defaultResolverSize
			}
			gc.resolver = &r
		}
	}
}

// chooser returns how guard g chooses the limiter of each request, or nil when every request
// gets g's limiter.
func (gc *guardConfig) chooser(g *Guard) func(Request, string) *Limiter {
	switch {
	case gc.tierLimiters != nil:
		tier, tiers := gc.tier, gc.tierLimiters
		return func(r Request, _ string) *Limiter {
			if l, ok := tiers[tier(r)]; ok {
				return l
			}
			return g.limiter
		}
	case gc.resolver != nil:
		return newResolverCache(g, gc).limiter
	}
	return nil
}
