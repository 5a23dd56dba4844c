package rules

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// maxUnknownTiers is how many tiers that no rule has an Engine logs per version applied: a
// tier may come from the client (a header), and the log must stay bounded.
const maxUnknownTiers = 16

// needTier returns an error naming the rules of set that have a tier, or nil when none has:
// for an engine without WithTier, whose requests are all of tier "", they would never apply.
func needTier(set *Set) error {
	var tiered []string
	for i := range set.rules {
		if r := &set.rules[i]; r.Tier != "" {
			tiered = append(tiered, strconv.Quote(r.Name))
		}
	}
	if len(tiered) == 0 {
		return nil
	}
	which := "the rule " + tiered[0] + " has a tier"
	if n := len(tiered); n > 1 {
		if n > 5 {
			tiered = append(tiered[:5], fmt.Sprintf("and %d more", n-5))
		}
		which = "the rules " + strings.Join(tiered, ", ") + " have a tier"
	}
	return fmt.Errorf("rules: version %s: %s, and the engine has no tier function (rules.WithTier): no request "+
		"has a tier, so a rule with one never applies; give the engine WithTier, or remove the tier", set.version, which)
}

// tiersOf returns the tiers that the rules of set have.
func tiersOf(set *Set) map[string]bool {
	tiers := map[string]bool{}
	for i := range set.rules {
		if t := set.rules[i].Tier; t != "" {
			tiers[t] = true
		}
	}
	return tiers
}

// unknownTiers logs the tiers of requests that no rule has, each once, the first
// maxUnknownTiers of them. Its zero value is ready for use.
type unknownTiers struct {
	logged sync.Map     // tier → struct{}{}
	count  atomic.Int32 // of tiers stored in logged
}

// log logs tier, which no rule of version has, unless it was logged already or
// maxUnknownTiers were.
func (u *unknownTiers) log(logger *slog.Logger, tier, version string) {
	tier = tier[:min(len(tier), maxLabel)] // no rule's tier is longer
	if u.count.Load() > maxUnknownTiers {
		return
	}
	if _, seen := u.logged.LoadOrStore(tier, struct{}{}); seen {
		return
	}
	switch n := u.count.Add(1); {
	case n <= maxUnknownTiers:
		logger.Warn("ratelimit rules: no rule has the tier of a request; it gets the rules without a tier", "tier", tier, "version", version)
	case n == maxUnknownTiers+1:
		logger.Warn("ratelimit rules: more tiers that no rule has; not logged until the rules change", "version", version)
	}
}
