package rls

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// refFixture is a server of semanticsConfig and windowsConfig counting in the reference's keys
// on a Redis, under a prefix of the test's own; it returns the client too.
func refFixture(t *testing.T, opts ...Option) (*fixture, *redis.Client, string) {
	t.Helper()
	client := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	f := newFixtureOn(t, redisStore, bothConfigs, append([]Option{WithReferenceKeys(client, prefix)}, opts...)...)
	return f, client, prefix
}

// TestReferenceKeys checks the keys and arithmetic of WithReferenceKeys: envoyproxy/ratelimit's
// key of each descriptor and window, counting every hit, a denied one too.
func TestReferenceKeys(t *testing.T) {
	f, client, prefix := refFixture(t)
	ctx := context.Background()
	f.clock.Advance(90 * time.Second) // the minute that starts at T0+60s
	minute := strconv.FormatInt(fakeclock.T0.Unix()+60, 10)
	second := strconv.FormatInt(fakeclock.T0.Unix()+90, 10)
	count := func(key string) string {
		t.Helper()
		v, err := client.Get(ctx, prefix+key).Result()
		if err != nil {
			return err.Error()
		}
		return v
	}

	for i, want := range []string{"OK: OK 2/3/SECOND 1s", "OK: OK 0/3/SECOND 1s", "OVER_LIMIT: OVER_LIMIT 0/3/SECOND 1s"} {
		n := uint64(1)
		if i > 0 {
			n = 2 // 1+2 = 3: the last; 3+2 = 5: over, and counted
		}
		if got := summary(f.call(request("edge", hits(n, desc("ip", "10.0.0.1"))))); got != want {
			t.Errorf("call %d: %s, want %s", i, got, want)
		}
	}
	if got := count("edge_ip_10.0.0.1_" + second); got != "5" {
		t.Errorf("the count in the reference's key is %s, want 5 (every hit, the denied ones too)", got)
	}
	if ttl := client.TTL(ctx, prefix+"edge_ip_10.0.0.1_"+second).Val(); ttl <= 0 || ttl > time.Second {
		t.Errorf("its TTL is %v, want the unit's length (1s) at most", ttl)
	}

	// Nested entries, in order; a supplied limit of the same unit shares the rule's count, as in
	// the reference.
	f.call(request("edge", desc("user", "u1", "plan", "free")))
	if got := count("edge_user_u1_plan_free_" + strconv.FormatInt(fakeclock.T0.Unix()-fakeclock.T0.Unix()%(30*86400), 10)); got != "1" {
		t.Errorf("a nested descriptor's count: %s, want 1", got)
	}
	f.call(request("edge", desc("path", "/api/x")))
	if got := summary(f.call(request("edge", limited(4, typev3.RateLimitUnit_MINUTE, desc("path", "/api/x"))))); got != "OK: OK 2/4/MINUTE 30s" {
		t.Errorf("a supplied limit over the rule's key: %s, want the count shared (2 of 4 left)", got)
	}
	if got := count("edge_path_/api/x_" + minute); got != "2" {
		t.Errorf("the shared count: %s, want 2", got)
	}

	// A rule with an algorithm or several windows stays in the store.
	if got := summary(f.call(request("edge", desc("two", "v")))); got != "OK: OK 1/2/SECOND 1s" {
		t.Errorf("a rule of two windows: %s", got)
	}
	if keys := client.Keys(ctx, prefix+"edge_two_*").Val(); len(keys) != 0 {
		t.Errorf("a rule of two windows wrote the reference's keys %v", keys)
	}

	// A limit of 0 is counted too, and over.
	if got := summary(f.call(request("edge", desc("path", "/closed")))); got != "OVER_LIMIT: OVER_LIMIT 0/0/HOUR 58m30s" {
		t.Errorf("a limit of 0: %s", got)
	}
}

// TestReferenceKeysFailMode checks that a Redis that cannot answer gets the fail mode.
func TestReferenceKeysFailMode(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })
	f := newFixture(t, semanticsConfig, WithReferenceKeys(client, ""))
	_, err := f.srv.ShouldRateLimit(context.Background(), request("edge", desc("ip", "1")))
	if status.Code(err) != codes.Unavailable {
		t.Errorf("FailError: %v, want Unavailable", err)
	}
	f = newFixture(t, semanticsConfig, WithReferenceKeys(client, ""), WithFailMode(FailDeny))
	if got := summary(f.call(request("edge", desc("ip", "1"), desc("cookie", "c")))); got != "OVER_LIMIT: OVER_LIMIT 0/3/SECOND 1s, OK 0/-" {
		t.Errorf("FailDeny: %s", got)
	}
	cfg, _ := ParseConfig()
	for name, o := range map[string]Option{"WithReferenceKeys(nil)": WithReferenceKeys(nil, ""),
		"WithIETFHeaders(12)": WithIETFHeaders(12), "WithIETFHeaders(0)": WithIETFHeaders(0)} {
		if s, err := NewServer(ratelimit.NewMemoryStore(), cfg, o); err == nil || s != nil {
			t.Errorf("%s: got %v, %v; want an error", name, s, err)
		}
	}
}
