package ratelimit_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// With hash state, the policies of an identity whose state is integers share one hash,
// prefix + "{" + identity + "}", a field each named by the tag that ends the policy's own
// key; a sliding log keeps its sorted set under its own key, as without the option. The hash
// lives as long as its longest-lived field needs, and a reset deletes the fields.
func TestHashStateLayout(t *testing.T) {
	client := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	ctx := context.Background()
	perSecond := ratelimit.Policy{Limit: 10, Window: time.Second}
	perHour := ratelimit.Policy{Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}}
	logged := ratelimit.Policy{Limit: 100, Window: time.Minute, Algorithm: algorithms.SlidingLog{}}
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithHashState()), perSecond, perHour, logged)
	if d, err := l.Allow(ctx, "user:7"); err != nil || !d.Allowed {
		t.Fatalf("Allow: %+v, %v", d, err)
	}

	keys, err := client.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	hash := prefix + "{user:7}"
	logKey := ratelimit.StorageKey(prefix, "user:7", logged, false)
	want := []string{hash, logKey}
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("keys %q; want the hash %q and the log's own %q", keys, hash, logKey)
	}
	fields, err := client.HGetAll(ctx, hash).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []ratelimit.Policy{perSecond, perHour} {
		own := ratelimit.StorageKey(prefix, "user:7", p, false)
		field := own[strings.LastIndex(own, "}:")+2:]
		if fields[field] == "" {
			t.Errorf("policy %s: no field %q in %v", p.Name, field, fields)
		}
	}
	if len(fields) != 2 {
		t.Errorf("fields %v; want the two policies' own", fields)
	}
	// The fixed window's count lasts to the end of its hour, the GCRA's TAT a tenth of a second.
	if ttl := client.PTTL(ctx, hash).Val(); ttl < 100*time.Millisecond || ttl > time.Hour {
		t.Errorf("PTTL of the hash %v; want the fixed window's, until the end of its hour", ttl)
	}

	if err := l.Reset(ctx, "user:7"); err != nil {
		t.Fatal(err)
	}
	if n := client.Exists(ctx, hash, logKey).Val(); n != 0 {
		t.Errorf("after Reset, %d of the keys remain", n)
	}
}

// Two policy lists that share an identity and a policy (tiers, a Resolver) share its field,
// so its quota is one: and the list whose fields live shorter never shortens the life of the
// hash that the other's need. A hash that expired with a field still counting would give the
// identity its quota afresh.
func TestHashStateListsShareAnIdentity(t *testing.T) {
	client := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	ctx := context.Background()
	clock := newFakeClock()
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithHashState(), ratelimit.WithClock(clock))
	perSecond := ratelimit.Policy{Name: "burst", Limit: 5, Window: time.Second}
	perDay := ratelimit.Policy{Name: "daily", Limit: 3, Window: 24 * time.Hour, Algorithm: algorithms.FixedWindow{}}
	both := mustNew(t, store, perSecond, perDay)
	short := mustNew(t, store, perSecond)
	hash := prefix + "{u}"

	for i := range 3 {
		if d, err := both.Allow(ctx, "u"); err != nil || !d.Allowed {
			t.Fatalf("check %d of the daily list: %+v, %v", i+1, d, err)
		}
	}
	long := client.PTTL(ctx, hash).Val()
	if long < time.Hour {
		t.Fatalf("PTTL %v after the daily list's checks; want what the daily count needs", long)
	}
	// The short list is charged on the shared field, and writes only it.
	if d, err := short.Allow(ctx, "u"); err != nil || !d.Allowed || d.Remaining != 1 {
		t.Fatalf("short list: %+v, %v; want allowed with 1 left of the 5 the two lists share", d, err)
	}
	if ttl := client.PTTL(ctx, hash).Val(); ttl < long-time.Minute {
		t.Fatalf("PTTL %v after the short list's check, was %v: the daily count would expire with the hash", ttl, long)
	}
	clock.Advance(time.Minute)
	if d, err := both.Allow(ctx, "u"); err != nil || d.Allowed {
		t.Fatalf("a fourth check of the daily list: %+v, %v; want denied (3 a day)", d, err)
	}
}

// Corrupt state in a field of the hash is an error naming the hash and the field, as one in
// a key of its own names the key: the field's name alone, a policy's tag, names no key, and
// sent the reader looking for one. Both reads: a field alone (HGET) and fields at once (HMGET).
func TestHashStateMalformedStateNamesHashAndField(t *testing.T) {
	client := redistest.Standalone(t)
	ctx := context.Background()
	perMinute := ratelimit.Policy{Name: "minute", Limit: 5, Window: time.Minute}
	perHour := ratelimit.Policy{Name: "hour", Limit: 50, Window: time.Hour, Algorithm: algorithms.FixedWindow{}}
	for _, tc := range []struct {
		name     string
		policies []ratelimit.Policy
		bad      ratelimit.Policy
		value    string
	}{
		{"a TAT, alone", []ratelimit.Policy{perMinute}, perMinute, "not a number"},
		{"a TAT, with another", []ratelimit.Policy{perMinute, perHour}, perMinute, "5:3:2"},
		{"a window's count, alone", []ratelimit.Policy{perHour}, perHour, "1:2:3"},
		{"a window's count, with another", []ratelimit.Policy{perMinute, perHour}, perHour, "x:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := redistest.Prefix(t)
			store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithHashState(), ratelimit.WithBreaker(0, 0))
			l := mustNew(t, store, tc.policies...)
			hash := prefix + "{u}"
			own := ratelimit.StorageKey(prefix, "u", tc.bad, false)
			field := own[strings.LastIndex(own, "}:")+2:]
			if err := client.HSet(ctx, hash, field, tc.value).Err(); err != nil {
				t.Fatal(err)
			}
			client.Expire(ctx, hash, time.Hour)
			_, err := l.Allow(ctx, "u")
			if err == nil || !strings.Contains(err.Error(), "malformed state at key "+hash+" field "+field) {
				t.Fatalf("state %q in field %s: got %v; want a malformed-state error naming the hash %s and the field", tc.value, field, err, hash)
			}
		})
	}
}

// Switching a store to hash state starts afresh the policies whose state moves into the hash
// (their state is under another key), not a sliding log, whose key is the same either way:
// its count carries over (README said every identity starts afresh).
func TestHashStateSwitchKeepsLogs(t *testing.T) {
	client := redistest.Standalone(t)
	prefix := redistest.Prefix(t)
	ctx := context.Background()
	clock := newFakeClock()
	rate := ratelimit.Policy{Name: "rate", Limit: 5, Window: time.Minute}
	logged := ratelimit.Policy{Name: "log", Limit: 5, Window: time.Minute, Algorithm: algorithms.SlidingLog{}}
	keys := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithClock(clock)), rate, logged)
	for i := range 3 {
		if d, err := keys.Allow(ctx, "u"); err != nil || !d.Allowed {
			t.Fatalf("check %d with a key per policy: %+v, %v", i+1, d, err)
		}
	}
	hashed := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithClock(clock), ratelimit.WithHashState()), rate, logged)
	d, err := hashed.Peek(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	r := d.Results()
	if r[0].Remaining != 4 || r[1].Remaining != 1 {
		t.Fatalf("after the switch: %d and %d remaining; want the rate afresh (4 after the peek's 1) and the log's count kept (1)", r[0].Remaining, r[1].Remaining)
	}
}
