package rules

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// The options of WithGuardOptions come first in the guard of every rule, and the options of
// the rule's own settings (its key, cost and policies, then WithResponse: the engine's
// Response with the rule's fail mode) follow. The core refuses an option given twice, so these
// are refused here, with the rule's field (or the engine's option) to give instead; and
// WithResolver, which would choose a request's policies (its tier's or Resolve's) in place of
// its rule's.
// checkGuardOptions finds them by what NewGuard refuses: each added once more to the options.

// Errors of the guard options that would take from each rule what it decides.
var (
	errGuardPolicies = errors.New("rules: WithGuardOptions(ratelimit.WithPolicies(...)): a rule's policies are its own; " +
		"set the rule's policies field in the rules file")
	errGuardKey = errors.New("rules: WithGuardOptions(ratelimit.WithKey(...)): a rule's key is its own; " +
		"set the rule's key field in the rules file (key: ip, key: [api_key, route], ...)")
	errGuardCost = errors.New("rules: WithGuardOptions(ratelimit.WithCost(...)): a rule's cost is its own; " +
		"set the rule's cost field in the rules file (cost: 5; default 1)")
	// errFailModeIsTheRules says why no option sets Response.FailClosed for every rule.
	errFailModeIsTheRules = errors.New("the fail mode (Response.FailClosed) is each rule's, and an option for every rule would close " +
		"the rules of fail: open; write fail: closed in the rules file for the rules that refuse requests while the store is down")
	errGuardResponse = fmt.Errorf("rules: WithGuardOptions(ratelimit.WithResponse(...)): give the Response by rules.WithResponse, "+
		"which gives it to each rule's guard with the rule's fail mode; %w", errFailModeIsTheRules)
	errGuardPoliciesChosen = errors.New("rules: WithGuardOptions(ratelimit.WithResolver(...)): a rule's " +
		"policies are its own, and a Resolver's (its Tiers' or its Resolve's) would replace them, so the rules file would have no effect; " +
		"give each tier rules of its own (tier: in the rules file, and rules.WithTier)")
)

// checkGuardOptions returns an error when opts hold an option that a rule's own settings set
// (WithPolicies, WithKey, WithCost, WithResponse, which holds the fail mode), one that would
// choose a request's policies (WithResolver), or options each valid alone that NewGuard refuses together (one
// given twice, in two WithGuardOptions). It runs none of the functions that opts were given:
// it only makes guards. Options that are invalid on their own are left to the guard of each
// rule to report.
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
	l, err := ratelimit.New(ratelimit.NewMemoryStore(), policies...)
	if err != nil {
		panic("rules: " + err.Error()) // constant policies, valid
	}
	refused := func(more ratelimit.Option) bool {
		_, err := ratelimit.NewGuard(l, append(slices.Clip(opts), more)...)
		return err != nil
	}
	if _, err := ratelimit.NewGuard(l, opts...); err != nil {
		for _, o := range opts {
			if _, err := ratelimit.NewGuard(l, o); err != nil {
				return nil // an option invalid alone: each rule's guard reports it, naming the rule
			}
		}
		// Each valid alone, refused together: an option given twice (the options of every
		// WithGuardOptions add up) or two that exclude each other. The engine's options are
		// at fault, whatever the rule, so the error names no rule.
		return fmt.Errorf("rules: WithGuardOptions (the options of all of them, which add up): %w", err)
	}
	// With opts valid, each of these is refused only when opts hold it already (an option
	// given twice).
	for _, c := range []struct {
		opt ratelimit.Option
		err error
	}{
		{ratelimit.WithPolicies(policies...), errGuardPolicies},
		{ratelimit.WithKey(func(ratelimit.Request) (string, error) { return "probe", nil }), errGuardKey},
		{ratelimit.WithCost(func(ratelimit.Request) int64 { return 1 }), errGuardCost},
		{ratelimit.WithResponse(ratelimit.Response{}), errGuardResponse},
		{ratelimit.WithResolver(ratelimit.Resolver{Tier: func(ratelimit.Request) string { return "" }, Tiers: map[string][]ratelimit.Policy{"probe": policies}}), errGuardPoliciesChosen},
	} {
		if refused(c.opt) {
			return c.err
		}
	}
	return nil
}
