package rules

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// onRedis runs f against the real standalone server and the real Cluster.
func onRedis(t *testing.T, f func(t *testing.T, client redis.UniversalClient)) {
	t.Run("standalone", func(t *testing.T) { f(t, redistest.Standalone(t)) })
	t.Run("cluster", func(t *testing.T) { f(t, redistest.Cluster(t)) })
}

// doc returns a small valid document of the given version.
func doc(version string) []byte {
	return []byte("version: " + version + "\nrules:\n  - {name: default, key: ip, policies: [{limit: 10, window: 1m}]}\n")
}

// serverTime returns the Redis server's clock, which pushed_at is read from.
func serverTime(t *testing.T, client redis.UniversalClient) time.Time {
	t.Helper()
	now, err := client.Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// TestPushFetch: a YAML and a JSON document come back as pushed, the hash holds the six
// fields of a push and nothing else (not a field left by someone before), pushed_at is the server's
// time, and a second push replaces the first.
func TestPushFetch(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		for _, name := range []string{"limits.yaml", "limits.json"} {
			key := redistest.Prefix(t) + "rules"
			if err := client.HSet(ctx, key, "left-over", "x").Err(); err != nil {
				t.Fatal(err)
			}
			data := mustRead(t, name)
			before := serverTime(t, client).Truncate(time.Millisecond)
			set, err := Push(ctx, client, key, name, data, WithUserKey(userKey{}))
			if err != nil {
				t.Fatalf("Push(%s): %v", name, err)
			}
			after := serverTime(t, client)
			got, err := Fetch(ctx, client, key, WithUserKey(userKey{}))
			if err != nil {
				t.Fatalf("Fetch after pushing %s: %v", name, err)
			}
			if got.Version != "2026-11-23.1" || got.Set.Version() != got.Version || got.Name != name || !bytes.Equal(got.Document, data) {
				t.Errorf("%s: fetched version %q (set %q), name %q, %d bytes; want 2026-11-23.1, %s, the %d bytes pushed",
					name, got.Version, got.Set.Version(), got.Name, len(got.Document), name, len(data))
			}
			if got.PushedAt.Before(before) || got.PushedAt.After(after) {
				t.Errorf("%s: pushed at %v; want between %v and %v (the server's TIME)", name, got.PushedAt, before, after)
			}
			if want := withoutKeyFuncs(set.Rules()); !reflect.DeepEqual(withoutKeyFuncs(got.Set.Rules()), want) {
				t.Errorf("%s: the fetched rules differ from the pushed ones", name)
			}
			fields, err := client.HKeys(ctx, key).Result()
			slices.Sort(fields)
			if want := []string{"document", "forced", "name", "previous", "pushed_at", "version"}; err != nil || !slices.Equal(fields, want) {
				t.Errorf("%s: the hash has the fields %q (%v); want %q", name, fields, err, want)
			}
			if v, err := StoredVersion(ctx, client, key); err != nil || v != set.Version() {
				t.Errorf("%s: StoredVersion = %q, %v; want %q", name, v, err, set.Version())
			}

			if _, err := Push(ctx, client, key, "next.yaml", doc("v2")); err != nil {
				t.Fatal(err)
			}
			if got, err := Fetch(ctx, client, key); err != nil || got.Version != "v2" || got.Name != "next.yaml" {
				t.Errorf("%s: after a second push Fetch = %+v, %v; want v2 from next.yaml", name, got, err)
			}
		}
	})
}

// subscribe subscribes to the channel key and waits until the server confirms it. On a Cluster
// it subscribes on every master, so each node's subscribers are heard from.
func subscribe(t *testing.T, client redis.UniversalClient, key string) []*redis.PubSub {
	t.Helper()
	ctx := t.Context()
	nodes := []redis.UniversalClient{client}
	if cc, ok := client.(*redis.ClusterClient); ok {
		nodes = nil
		var (
			mu    sync.Mutex // ForEachMaster calls f concurrently
			addrs []string
		)
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			addrs = append(addrs, node.Options().Addr)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, addr := range addrs {
			node := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { node.Close() })
			nodes = append(nodes, node)
		}
	}
	var subs []*redis.PubSub
	for _, node := range nodes {
		ps := node.Subscribe(ctx, key)
		t.Cleanup(func() { ps.Close() })
		if _, err := ps.Receive(ctx); err != nil { // the confirmation
			t.Fatalf("subscribing to %s: %v", key, err)
		}
		subs = append(subs, ps)
	}
	return subs
}

// TestPushAnnounces: every subscriber of the channel (on every node of a Cluster) hears the
// version of each document pushed, in order, and nothing of a document refused, which leaves
// the rules in Redis as they were.
func TestPushAnnounces(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient) {
		ctx := t.Context()
		key := redistest.Prefix(t) + "rules"
		subs := subscribe(t, client, key)
		if _, err := Push(ctx, client, key, "limits.yaml", doc("v1")); err != nil {
			t.Fatal(err)
		}

		bad := []byte("version: v-bad\nrules:\n  - {name: default, key: ip, policies: [{limit: 10, window: 1x}]}\n")
		_, err := Push(ctx, client, key, "limits.yaml", bad)
		var errs Errors
		if !errors.As(err, &errs) || !strings.Contains(err.Error(), `limits.yaml:3: rules[0].policies[0].window: "1x" is not a duration`) {
			t.Fatalf("Push of an invalid document: %v; want Parse's errors", err)
		}
		if got, err := Fetch(ctx, client, key); err != nil || got.Version != "v1" || !bytes.Equal(got.Document, doc("v1")) {
			t.Fatalf("after an invalid push Fetch = %+v, %v; want v1 as it was", got, err)
		}

		if _, err := Push(ctx, client, key, "limits.yaml", doc("v2")); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // a bound, should a message be lost
		defer cancel()
		for i, ps := range subs {
			for _, want := range []string{"v1", "v2"} {
				msg, err := ps.ReceiveMessage(ctx)
				if err != nil || msg.Channel != key || msg.Payload != want {
					t.Errorf("subscriber %d: message %+v, %v; want %s on %s (nothing of the refused document)", i, msg, err, want, key)
				}
			}
		}
	})
}

// TestPushInvalidOnNothing: a document refused where no rules are stored writes no key.
func TestPushInvalidOnNothing(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	if _, err := Push(t.Context(), client, key, "limits.yaml", []byte("rules: [")); err == nil {
		t.Fatal("Push of a syntax error succeeded")
	}
	if n, err := client.Exists(t.Context(), key).Result(); err != nil || n != 0 {
		t.Errorf("EXISTS %s = %d, %v; want 0", key, n, err)
	}
	if _, err := Fetch(t.Context(), client, key); !errors.Is(err, ErrNoRules) {
		t.Errorf("Fetch = %v; want ErrNoRules", err)
	}
}

// TestPushAfterScriptFlush: a server that lost the script (a restart, a failover, SCRIPT
// FLUSH) is sent its source.
func TestPushAfterScriptFlush(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	if err := client.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := Push(t.Context(), client, key, "limits.yaml", doc("v1")); err != nil {
		t.Fatalf("Push after SCRIPT FLUSH: %v", err)
	}
	if v, err := StoredVersion(t.Context(), client, key); err != nil || v != "v1" {
		t.Errorf("StoredVersion = %q, %v; want v1", v, err)
	}
}

// TestNoRules: nothing at the key is ErrNoRules, naming the key.
func TestNoRules(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient) {
		key := redistest.Prefix(t) + "rules"
		_, err := Fetch(t.Context(), client, key)
		if !errors.Is(err, ErrNoRules) || !strings.Contains(err.Error(), key) {
			t.Errorf("Fetch = %v; want ErrNoRules naming %s", err, key)
		}
		_, err = StoredVersion(t.Context(), client, key)
		if !errors.Is(err, ErrNoRules) || !strings.Contains(err.Error(), key) {
			t.Errorf("StoredVersion = %v; want ErrNoRules naming %s", err, key)
		}
	})
}

// TestFetchMalformed: a hash that is not as Push stores it is an error naming the key and
// what is wrong, never ErrNoRules and never a panic.
func TestFetchMalformed(t *testing.T) {
	good := map[string]string{"version": "v1", "name": "limits.yaml", "document": string(doc("v1")), "pushed_at": "1795401600000"}
	with := func(field, value string) map[string]string {
		h := make(map[string]string, len(good))
		for k, v := range good {
			if k != field {
				h[k] = v
			}
		}
		if value != "" {
			h[field] = value
		}
		return h
	}
	for _, tc := range []struct {
		name   string
		hash   map[string]string // nil: a string at the key
		want   string
		errors bool // the error wraps Parse's Errors
	}{
		{"no version", with("version", ""), "no field version; push the rules again", false},
		{"only a version", map[string]string{"version": "v1"}, "no field name, document, pushed_at", false},
		{"pushed_at not a number", with("pushed_at", "soon"), `pushed_at "soon" is not a time in Unix milliseconds`, false},
		{"pushed_at negative", with("pushed_at", "-5"), `pushed_at "-5" is not a time`, false},
		{"version not the document's", with("version", "v0"), `its version is "v0", but its document's is "v1"`, false},
		{"document does not parse", with("document", "rules: ["), "does not parse: limits.yaml:1: YAML syntax", true},
		{"user key without WithUserKey", with("document", "version: v1\nrules:\n  - {name: a, key: user, policies: [{limit: 1, window: 1s}]}\n"),
			`does not parse: limits.yaml:3: rules[0].key: "user" needs to know`, true},
		{"not a hash", nil, "WRONGTYPE", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onRedis(t, func(t *testing.T, client redis.UniversalClient) {
				ctx := t.Context()
				key := redistest.Prefix(t) + "rules"
				var err error
				if tc.hash == nil {
					err = client.Set(ctx, key, "x", 0).Err()
				} else {
					err = client.HSet(ctx, key, tc.hash).Err()
				}
				if err != nil {
					t.Fatal(err)
				}
				s, err := Fetch(ctx, client, key)
				var errs Errors
				switch {
				case s != nil || err == nil:
					t.Fatalf("Fetch = %+v, %v; want an error", s, err)
				case !strings.Contains(err.Error(), `"`+key+`"`) || !strings.Contains(err.Error(), tc.want):
					t.Errorf("Fetch: %v; want the key %q and %q", err, key, tc.want)
				case errors.Is(err, ErrNoRules):
					t.Errorf("Fetch: %v is ErrNoRules; want another error", err)
				case errors.As(err, &errs) != tc.errors:
					t.Errorf("Fetch: %v; errors.As(Errors) = %v, want %v", err, !tc.errors, tc.errors)
				}
			})
		})
	}
}

// TestRedisArgs: a missing client or key is an error, not a panic, and Push writes nothing.
func TestRedisArgs(t *testing.T) {
	client := redistest.Standalone(t)
	ctx := t.Context()
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		key    string
		want   string
	}{
		{"no client", nil, "rl:rules", "needs a go-redis client"},
		{"no key", client, "", "needs a key, such as rules.DefaultRedisKey"},
	} {
		_, err1 := Push(ctx, tc.client, tc.key, "limits.yaml", doc("v1"))
		_, err2 := Fetch(ctx, tc.client, tc.key)
		_, err3 := StoredVersion(ctx, tc.client, tc.key)
		for i, err := range []error{err1, err2, err3} {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: call %d: %v; want %q", tc.name, i+1, err, tc.want)
			}
		}
	}
	if n, err := client.Exists(ctx, "").Result(); err != nil || n != 0 {
		t.Errorf(`EXISTS "" = %d, %v; want 0`, n, err)
	}
}
