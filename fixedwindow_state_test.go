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
// window's end. A check in the window the key holds keeps that expiry (but on an injected
// clock, where each write gives the key a minute at least); a state of an earlier window is
// counted afresh and takes the new window's end; a state that is not two integers is an error,
// whichever form it takes.
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
	// The key keeps the expiry it has through its window's checks (SET KEEPTTL, on Redis 7.0
	// and later, which the tests run): one shortened by hand stays so.
	client.PExpire(ctx, key, 5*time.Second)
	if d := allow(t, l, "fw", 1); d.Remaining != 2 || ttl() > 5*time.Second {
		t.Fatalf("a check of the window after PEXPIRE 5 s: remaining %d, PTTL %v; want 2, the expiry kept", d.Remaining, ttl())
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

	// On an injected clock, which may stay in a window longer than Redis' clock runs, every
	// write makes the key live at least a minute from then: a key shortened by hand is given
	// its minute again.
	clock := newFakeClock()
	injected := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix+"i:"), ratelimit.WithClock(clock), ratelimit.WithBreaker(0, 0)),
		ratelimit.Policy{Limit: 5, Window: time.Hour, Algorithm: algorithms.FixedWindow{}})
	allow(t, injected, "fw", 1)
	ikeys, err := client.Keys(ctx, prefix+"i:*").Result()
	if err != nil || len(ikeys) != 1 {
		t.Fatalf("keys %v %v", ikeys, err)
	}
	ikey := ikeys[0]
	client.PExpire(ctx, ikey, 5*time.Second)
	allow(t, injected, "fw", 1)
	if d, err := client.PTTL(ctx, ikey).Result(); err != nil || d < 50*time.Second {
		t.Fatalf("PTTL %v (%v) after a check on an injected clock; want the minute a write gives", d, err)
	}

	for _, v := range []string{"", "7", "7:1:2", "7.5:1", "a:b", "7:", ":1"} {
		client.Set(ctx, key, v, time.Minute)
		if _, err := l.Allow(ctx, "fw"); err == nil || !strings.Contains(err.Error(), "malformed state") {
			t.Fatalf("state %q: got %v, want a malformed-state error", v, err)
		}
	}
}
