package rules_test

import (
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/compilecheck"
)

// TestOptionMisuseDoesNotCompile: no option of this package is silently ignored. One given to
// a function it does not concern — an engine's to Parse, a start option to NewEngine — does
// not compile, and every option builds where it applies.
func TestOptionMisuseDoesNotCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	imports := []string{"context", "time", "github.com/redis/go-redis/v9", "github.com/a7d3e0dd/ratelimit", "github.com/a7d3e0dd/ratelimit/rules"}
	const prelude = `ctx, c, store, set := context.Background(), redis.NewClient(&redis.Options{}), ratelimit.NewMemoryStore(), (*rules.Set)(nil)
	_, _, _, _, _ = ctx, c, store, set, time.Second
	`
	misuse := map[string]string{ // case → the option that must not fit
		"enginetoparse":  `rules.Parse("r.yaml", nil, rules.WithHeartbeat(time.Second))`,
		"loggertopush":   `rules.Push(ctx, c, "k", "r.yaml", nil, rules.WithLogger(nil))`,
		"tiertofetch":    `rules.Fetch(ctx, c, "k", rules.WithTier(nil))`,
		"starttoengine":  `rules.NewEngine(store, set, rules.WithStartTimeout(time.Second))`,
		"defaulttoopen":  `rules.Open(store, "r.yaml", rules.WithDefaultRules("r.yaml", nil))`,
		"ratelimittoeng": `rules.NewEngine(store, set, ratelimit.WithKey(nil))`,
	}
	cases := []compilecheck.Case{{Name: "fits", Imports: imports, Body: prelude + `
	rules.Parse("r.yaml", nil, rules.WithUserKey("user"))
	rules.Push(ctx, c, "k", "r.yaml", nil, rules.WithUserKey("user"))
	rules.Fetch(ctx, c, "k", rules.WithUserKey("user"))
	rules.NewEngine(store, set, rules.WithUserKey("user"), rules.WithTier(nil), rules.WithLogger(nil), rules.WithReporter(nil),
		rules.WithGuardOptions(ratelimit.WithTimeout(time.Second)), rules.WithPollInterval(time.Second),
		rules.WithInstanceName("a"), rules.WithHeartbeat(time.Second), rules.WithLastKnownGood("f"),
		rules.WithResponse(ratelimit.Response{}))
	rules.Open(store, "r.yaml", rules.WithUserKey("user"), rules.WithPollInterval(time.Second))
	rules.OpenRedis(ctx, store, c, "k", rules.WithUserKey("user"), rules.WithLogger(nil), rules.WithLastKnownGood("f"),
		rules.WithDefaultRules("r.yaml", nil), rules.WithStartTimeout(time.Second))`}}
	for name, body := range misuse {
		cases = append(cases, compilecheck.Case{Name: name, Imports: imports, Body: prelude + body})
	}
	failed := compilecheck.Build(t, []string{".", "rules"}, cases)
	if out, ok := failed["fits"]; ok {
		t.Fatalf("options given where they apply do not build:\n%s", out)
	}
	for name, body := range misuse {
		i := max(strings.LastIndex(body, "rules.With"), strings.LastIndex(body, "ratelimit.With"))
		opt := body[i:]
		opt = opt[:strings.Index(opt, "(")]
		if out := failed[name]; !strings.Contains(out, "cannot use "+opt) {
			t.Errorf("%s builds, or fails otherwise than on %s:\n%s", body, opt, out)
		}
	}
}
