package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// TestInspectResetHolds: an application's reservations (Limiter.Reserve) are shown by
// inspect, per policy list: those of the inspected policies, and another list's that shares a
// policy with them. reset forgets the inspected list's holds with its state, so that a
// reservation made before it, settled after, is charged its whole actual; the other list's
// holds stay. For each kind of store: plain, compact and hash state (with compact state, the
// lists that begin with the inspected list's first policy, as the other does here).
func TestInspectResetHolds(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient, addr string) {
		for _, kind := range []struct {
			flag string
			opt  []ratelimit.RedisOption
		}{{"", nil}, {"-compact", []ratelimit.RedisOption{ratelimit.WithCompactState()}}, {"-hash", []ratelimit.RedisOption{ratelimit.WithHashState()}}} {
			t.Run(strings.TrimPrefix(kind.flag, "-")+"state", func(t *testing.T) {
				prefix := redistest.Prefix(t)
				store := ratelimit.NewRedisStore(client, append([]ratelimit.RedisOption{ratelimit.WithPrefix(prefix)}, kind.opt...)...)
				tokens := ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Hour, Algorithm: algorithms.FixedWindow{}}
				daily := ratelimit.Policy{Name: "daily", Limit: 1000, Window: 24 * time.Hour, Algorithm: algorithms.FixedWindow{}}
				app, err := ratelimit.New(store, tokens)
				if err != nil {
					t.Fatal(err)
				}
				other, err := ratelimit.New(store, tokens, daily)
				if err != nil {
					t.Fatal(err)
				}
				var held []ratelimit.Decision
				for range 3 {
					d, err := app.Reserve(t.Context(), "tenant", 20)
					if err != nil || !d.Allowed {
						t.Fatalf("Reserve: %+v, %v", d, err)
					}
					held = append(held, d)
				}
				if d, err := other.Reserve(t.Context(), "tenant", 5); err != nil || !d.Allowed {
					t.Fatalf("Reserve on the other list: %+v, %v", d, err)
				}
				args := []string{"-redis", addr, "-prefix", prefix, "-policy", "name=tokens,limit=100,window=1h,algorithm=fixed_window"}
				if kind.flag != "" {
					args = append(args, kind.flag)
				}
				state := func(cmd string) string { return cli(t, append(append([]string{cmd}, args...), "tenant")...).stdout }
				compact := kind.flag == "-compact"
				first := ratelimit.StorageKey(prefix, "tenant", tokens, compact)
				head := regexp.QuoteMeta(first[:strings.IndexByte(first, '}')+1])
				if compact {
					head = regexp.QuoteMeta(first) // the first policy's key: a hash tag is shared
				}
				ours := regexp.MustCompile(`(?m)^these policies\s+3\s+60\s+` + head + `:h\w+$`)
				theirs := regexp.MustCompile(`(?m)^another policy list\s+1\s+5\s+` + head + `:h\w+$`)
				if out := state("inspect"); !ours.MatchString(out) || !theirs.MatchString(out) {
					t.Fatalf("inspect printed\n%s\nwant the rows %s and %s", out, ours, theirs)
				}
				state("reset")
				if out := state("inspect"); strings.Contains(out, "these policies") || !theirs.MatchString(out) {
					t.Fatalf("inspect after the reset printed\n%s\nwant the other list's holds alone", out)
				}
				if err := app.Settle(t.Context(), "tenant", held[0], 30); err != nil {
					t.Fatal(err)
				}
				if d, err := app.AllowN(t.Context(), "tenant", 0); err != nil || d.Remaining != 70 {
					t.Fatalf("a settle of 30 after the reset: Remaining %d (%v); want 70, the whole actual", d.Remaining, err)
				}
			})
		}
	})
}
