package rules

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// The options of WithGuardOptions come first in the guard of every rule, and the rule's own
// follow: the last option of a kind wins (see ratelimit.Option), so a rule's key, cost and
// policies override the engine's. Three options cannot be overridden so: no ratelimit option
// opens again a guard that FailClosed closed, or takes back WithTiers or WithResolver, which
// choose a request's policies in place of the guard's. checkGuardOptions finds them and
// refuses them, with guards of its own over a store that is down.

// Errors of the guard options that would take from each rule what it decides.
var (
	errGuardFailClosed = errors.New("rules: WithGuardOptions(ratelimit.FailClosed(...)): the fail mode is each rule's, and no option " +
		"opens again a rule of fail: open; write fail: closed in the rules file for the rules that refuse requests while the store is down")
	errGuardTiers = errors.New("rules: WithGuardOptions(ratelimit.WithTiers(...)): a rule's policies are its own, and the tiers' would " +
		"replace them; give each tier rules of its own (tier: in the rules file, and rules.WithTier)")
	errGuardResolver = errors.New("rules: WithGuardOptions(ratelimit.WithResolver(...)): a rule's policies are its own, and a Resolver's " +
		"would replace them: the rules file would have no effect")
)

// checkGuardOptions returns an error when opts hold FailClosed, WithTiers or WithResolver. It
// runs none of the functions that opts were given. Options that are invalid on their own are
// left to the guard of each rule to report.
func checkGuardOptions(opts []ratelimit.Option) error {
	if len(opts) == 0 {
		return nil
	}
	// A rate and an in-flight policy, so that the options of either fit (WaitForSlot needs
	// the second).
	policies := []ratelimit.Policy{
		{Name: "probe", Limit: 1, Window: time.Second},
		{Name: "probe-slots", Algorithm: algorithms.InFlight{}, Limit: 1, Window: time.Second},
	}
	l, err := ratelimit.New(downStore{}, policies...)
	if err != nil {
		panic("rules: " + err.Error()) // constant policies, valid
	}
	guard := func(more ...ratelimit.Option) (*ratelimit.Guard, error) {
		o := append(slices.Clip(opts), ratelimit.WithPolicies(policies...)) // as a rule's guard does
		return ratelimit.NewGuard(l, append(o, more...)...)
	}
	if _, err := guard(); err != nil {
		return nil // each rule's guard reports it, naming the rule
	}
	// WithTiers and WithResolver exclude each other: options that NewGuard takes are refused
	// with one of them added only when they hold the other.
	if _, err := guard(ratelimit.WithResolver(ratelimit.Resolver{Resolve: func(ratelimit.Request, string) ([]ratelimit.Policy, error) {
		return nil, nil
	}})); err != nil {
		return errGuardTiers
	}
	if _, err := guard(ratelimit.WithTiers(func(ratelimit.Request) string { return "" },
		map[string][]ratelimit.Policy{"probe": policies})); err != nil {
		return errGuardResolver
	}
	// With the functions a request meets replaced by ours, a guard that refuses a request
	// while the store is down fails closed.
	g, err := guard(ratelimit.WithSkip(func(ratelimit.Request) bool { return false }),
		ratelimit.WithKey(func(ratelimit.Request) (string, error) { return "probe", nil }),
		ratelimit.WithCost(func(ratelimit.Request) int64 { return 1 }),
		ratelimit.WithErrorHandler(func(ratelimit.Request, error) {}))
	if err == nil && !g.Check(probeRequest{}).Proceed {
		return errGuardFailClosed
	}
	return nil
}

// downStore is a store that is down: every call fails. It holds in-flight slots (Renew), so
// that an in-flight policy may run over it, and is local, so that no call is timed.
type downStore struct{}

var errStoreDown = errors.New("rules: the store of checkGuardOptions is down")

func (downStore) Check(context.Context, string, []ratelimit.Policy, int64, bool, []ratelimit.PolicyResult) (time.Time, error) {
	return time.Time{}, errStoreDown
}
func (downStore) Refund(context.Context, string, []ratelimit.Policy, int64, time.Time) error {
	return errStoreDown
}
func (downStore) Reset(context.Context, string, []ratelimit.Policy) error { return errStoreDown }
func (downStore) Renew(context.Context, string, []ratelimit.Policy, int64, time.Time) (time.Time, error) {
	return time.Time{}, errStoreDown
}
func (downStore) Local() bool { return true }

// probeRequest is an empty request, for the guard of checkGuardOptions.
type probeRequest struct{}

func (probeRequest) Context() context.Context { return context.Background() }
func (probeRequest) Method() string           { return http.MethodGet }
func (probeRequest) Path() string             { return "/" }
func (probeRequest) Route() string            { return "" }
func (probeRequest) Header(string) string     { return "" }
func (probeRequest) RemoteAddr() string       { return "192.0.2.1:1" }
func (probeRequest) Value(any) any            { return nil }
