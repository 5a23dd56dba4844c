package ratelimit

import (
	"context"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/forwarded"
)

// Hooks for the external tests of the middleware.

// SystemClock is the default clock.
var SystemClock = defaultClock

// StoreLen returns the number of keys a memory store holds.
func StoreLen(s Store) int { return s.(*memoryStore).len() }

// HasDenialCache reports whether s has a denial cache.
func HasDenialCache(s Store) bool {
	rs, _ := capability[*resilientStore](s)
	return rs != nil && rs.denials != nil
}

// The guards of this package's tests give the store 10 s, not 100 ms, unless a test says
// otherwise (WithTimeout): a check that took longer on a busy machine would pass unlimited,
// and fail a test that counts what was admitted. Tests of the deadline set it.
// The Redis stores' calls get 10 s too (WithCallTimeout), unless a test asks for the
// documented bound (DocumentedCallTimeout).
func init() {
	defaultTimeout = 10 * time.Second
	defaultCallTimeout = 10 * time.Second
}

// documentedCallTimeout is the Redis store's bound of a call as the package has it, before
// the tests lengthen it (package variables are set before init runs).
var documentedCallTimeout = defaultCallTimeout

// DocumentedCallTimeout gives the Redis stores made during the test the package's own bound
// of a call (see WithCallTimeout), and returns it.
func DocumentedCallTimeout(t testing.TB) time.Duration {
	defaultCallTimeout = documentedCallTimeout
	t.Cleanup(func() { defaultCallTimeout = 10 * time.Second })
	return documentedCallTimeout
}

// DenialCacheHears reports whether the denial cache of s hears the fleet's refunds and
// resets, and so caches denials.
func DenialCacheHears(s Store) bool {
	rs, _ := capability[*resilientStore](s)
	return rs != nil && rs.denials != nil && rs.denials.live.Load()
}

// SetPingEvery makes the Redis stores made during the test check a quiet subscription every
// d, and take it for stalled after d more without an answer (see forgets.go). The root
// package's tests do not run in parallel.
func SetPingEvery(t testing.TB, d time.Duration) {
	old := pingEvery
	pingEvery = d
	t.Cleanup(func() { pingEvery = old })
}

// Listening reports whether the goroutine of the Redis store s that hears refunds and resets
// runs.
func Listening(s Store) bool {
	rs, _ := capability[*redisStore](s)
	return rs != nil && rs.listening.Load()
}

// SettleBackground waits for the Redis store s's background tasks under way (its reads of
// the eviction policy, its refunds of leases) to end: a test that counts the calls a request
// makes counts none of theirs then.
func SettleBackground(s Store) {
	if rs, _ := capability[*redisStore](s); rs != nil {
		rs.bg.tasks.Wait()
	}
}

// DenialCacheLen returns how many denials the denial cache of s holds.
func DenialCacheLen(s Store) int {
	if rs, _ := capability[*resilientStore](s); rs != nil && rs.denials != nil {
		return rs.denials.len()
	}
	return 0
}

// ParseForwarded parses a Forwarded header; each element is {for, by, host, proto}.
func ParseForwarded(v string) ([][4]string, error) {
	elems, err := forwarded.Parse(v)
	if err != nil || len(elems) == 0 {
		return nil, err
	}
	out := make([][4]string, len(elems))
	for i, e := range elems {
		out[i] = [4]string{e.For, e.By, e.Host, e.Proto}
	}
	return out, nil
}

// ParseForwardedNode parses the node of a for= parameter.
var ParseForwardedNode = forwarded.ParseNode

// HTTPRequest is r seen as a Request.
func HTTPRequest(r *http.Request) Request { return httpRequest{r} }

// IPResolver is a guard's client-IP resolver.
type IPResolver = ipResolver

// NewIPResolver returns the resolver of a guard configured by opts.
func NewIPResolver(opts ...Option) (*IPResolver, error) {
	gc := &guardConfig{ip: ipConfig{v6bits: 64}}
	for i, o := range opts {
		if o == nil {
			gc.errorf("option %d is nil", i+1)
			continue
		}
		o(gc)
	}
	if gc.ip.headerSet && len(gc.ip.trusted) == 0 && !gc.ip.unix {
		gc.errorf("TrustProxies(%q): name at least one proxy", gc.ip.header)
	}
	if err := gc.errs.err("ratelimit: NewIPResolver"); err != nil {
		return nil, err
	}
	return gc.ip.resolver(), nil
}

// ClientIP returns the client address of r.
func (res *ipResolver) ClientIP(r Request) (netip.Addr, error) { return res.clientIP(r) }

// Key returns the IP key of r.
func (res *ipResolver) Key(r Request) (string, error) { return res.key(r) }

// RenewSlots renews the in-flight slots d holds for key, as the guard does while a handler runs.
func RenewSlots(ctx context.Context, l *Limiter, key string, d *Decision) error {
	return l.renew(ctx, key, d)
}

// Holds reports whether d holds in-flight slots.
func Holds(d Decision) bool { return d.holds() }

// FallbackLists returns how many policy lists the fallback of s has scaled so far.
func FallbackLists(s Store) int {
	rs, _ := capability[*resilientStore](s)
	rs.fallback.mu.RLock()
	defer rs.fallback.mu.RUnlock()
	return rs.fallback.compiled
}

// DecisionTime returns the time of d on its store's clock: for a Redis store on the server's
// clock, the server's TIME when the script ran.
func DecisionTime(d Decision) time.Time { return d.at }
