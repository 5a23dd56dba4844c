package ratelimit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// A fixed window's state in Redis is "window index:count", under a key that expires at the
// window's end. A check in the window the key holds keeps that expiry; a state of an earlier
// window is counted afresh and takes the new window's end; a state that is not two integers is
// an error, whichever form it takes.
func TestRedisFixedWindowState(t *testing.T) {
	client := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithBreaker(0, 0))
	l := mustNew(t, store, ratelimit.Policy{Limit: 5, Window: time.Minute, Algorithm: algorithms.FixedWindow{}})
	allow(t, l, "fw", 1)
	keys, err := client.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v %v", keys, err)
	}
	key := keys[0]
	ttl := func() time.Duration {
		t.Helper()
		d, err := client.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := ttl(); d <= 0 || d > time.Minute {
		t.Fatalf("PTTL %v after the first check; want the window's end, within a minute", d)
	}
	if d := allow(t, l, "fw", 1); d.Remaining != 3 || ttl() > time.Minute {
		t.Fatalf("the second check of the window: remaining %d, PTTL %v; want 3, within a minute", d.Remaining, ttl())
	}

	// A state of window 0 (1970), living ten minutes: counted afresh, and it takes this
	// window's expiry, not the one it had.
	client.Set(ctx, key, "0:4", 10*time.Minute)
	if d := allow(t, l, "fw", 1); d.Remaining != 4 {
		t.Fatalf("a check over a state of an earlier window: remaining %d, want 4 (its count forgotten)", d.Remaining)
	}
	if d := ttl(); d <= 0 || d > time.Minute {
		t.Fatalf("PTTL %v after a check over a state of an earlier window; want this window's end, within a minute", d)
	}

	for _, v := range []string{"", "7", "7:1:2", "7.5:1", "a:b", "7:", ":1"} {
		client.Set(ctx, key, v, time.Minute)
		if _, err := l.Allow(ctx, "fw"); err == nil || !strings.Contains(err.Error(), "malformed state") {
			t.Fatalf("state %q: got %v, want a malformed-state error", v, err)
		}
	}
}
