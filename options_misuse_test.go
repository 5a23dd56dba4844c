package ratelimit_test

import (
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/compilecheck"
)

// TestOptionMisuseDoesNotCompile builds programs as a user writes them, outside the workspace:
// an option given to a constructor it does not fit — a guard's to a store, a store's to a
// guard, the Redis store's to the memory store — is a type error naming the option,
// while the same options given where they fit build.
func TestOptionMisuseDoesNotCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	imports := []string{"time", "github.com/redis/go-redis/v9", "github.com/a7d3e0dd/ratelimit"}
	const prelude = `l, _ := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: time.Second})
	c := redis.NewClient(&redis.Options{})
	_, _, _ = l, c, time.Second
	`
	misuse := map[string]string{ // case → the option that must not fit
		"guardtomemory": "ratelimit.NewMemoryStore(ratelimit.WithKey(ratelimit.KeyByIP()))",
		"guardtoredis":  "ratelimit.NewRedisStore(c, ratelimit.WithTimeout(time.Second))",
		"storetomw":     "ratelimit.Middleware(l, ratelimit.WithMaxKeys(10))",
		"storetoguard":  `ratelimit.NewGuard(l, ratelimit.WithPrefix("app:"))`,
		"loggertoguard": "ratelimit.Middleware(l, ratelimit.WithLogger(nil))",
		"redistomemory": "ratelimit.NewMemoryStore(ratelimit.WithFallback(0.5))",
		"breakertomem":  "ratelimit.NewMemoryStore(ratelimit.WithBreaker(3, time.Second))",
		"timeouttomem":  "ratelimit.NewMemoryStore(ratelimit.WithCallTimeout(time.Second))",
	}
	cases := []compilecheck.Case{{Name: "fits", Imports: imports, Body: prelude + `
	ratelimit.NewMemoryStore(ratelimit.WithMaxKeys(10), ratelimit.WithPrefix("app:"), ratelimit.WithLogger(nil), ratelimit.WithClock(nil))
	ratelimit.NewRedisStore(c, ratelimit.WithFallback(0.5), ratelimit.WithMaxKeys(10), ratelimit.WithBreaker(3, time.Second), ratelimit.WithDenialCache(10), ratelimit.WithPrefix("app:"), ratelimit.WithCallTimeout(time.Second))
	ratelimit.Middleware(l, ratelimit.WithKey(ratelimit.KeyByIP()), ratelimit.WithTimeout(time.Second), ratelimit.WithResponse(ratelimit.Response{FailClosed: 503}))
	var both []ratelimit.StoreOption
	ratelimit.NewMemoryStore(both[0])
	ratelimit.NewRedisStore(c, both[0])`}}
	for name, body := range misuse {
		cases = append(cases, compilecheck.Case{Name: name, Imports: imports, Body: prelude + body})
	}
	failed := compilecheck.Build(t, []string{"."}, cases)
	if out, ok := failed["fits"]; ok {
		t.Fatalf("options given where they fit do not build:\n%s", out)
	}
	for name, body := range misuse {
		opt := body[strings.LastIndex(body, "ratelimit.With"):]
		opt = opt[:strings.Index(opt, "(")]
		if out := failed[name]; !strings.Contains(out, "cannot use "+opt) {
			t.Errorf("%s builds, or fails otherwise than on %s:\n%s", body, opt, out)
		}
	}
}
