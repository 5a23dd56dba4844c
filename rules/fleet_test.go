package rules

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// lockedBuffer is a log several engines write to at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFleet polls Fleet until cond holds of it, failing after a generous bound.
func waitFleet(t *testing.T, client redis.UniversalClient, key, what string, cond func([]Instance) bool) []Instance {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		fleet, err := Fleet(t.Context(), client, key)
		if err != nil {
			t.Fatal(err)
		}
		if cond(fleet) {
			return fleet
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 20 s for %s; the fleet: %+v", what, fleet)
		}
	}
}

// Each watching instance records which version it runs and which it refused, and why; an
// instance that stops watching leaves the fleet once its record is not renewed; a forced push
// is logged by every instance that applies it.
func TestFleet(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient) {
		key := redistest.Prefix(t) + "rules"
		if _, err := Push(t.Context(), client, key, "limits.yaml", doc("1")); err != nil {
			t.Fatal(err)
		}
		var logs lockedBuffer
		stops := map[string]context.CancelFunc{}
		for _, name := range []string{"a", "b", "c"} {
			opts := []StartOption{WithInstanceName(name), WithHeartbeat(100 * time.Millisecond), WithPollInterval(time.Hour),
				WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))}
			if name != "c" { // c cannot read a rule keyed by user
				opts = append(opts, WithUserKey(userKey{}))
			}
			e, err := OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key, opts...)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); e.WatchRedis(ctx, client, key) }()
			stops[name] = func() { cancel(); <-done }
			t.Cleanup(stops[name])
		}
		waitFleet(t, client, key, "three instances on version 1", func(f []Instance) bool {
			return len(f) == 3 && f[0].Running == "1" && f[1].Running == "1" && f[2].Running == "1"
		})
		byUser := []byte("version: \"2\"\nrules:\n  - {name: users, key: user, policies: [{limit: 10, window: 1m}]}\n")
		if _, err := Push(t.Context(), client, key, "limits.yaml", byUser, WithUserKey(userKey{})); err != nil {
			t.Fatal(err)
		}
		fleet := waitFleet(t, client, key, "every instance's answer to version 2", func(f []Instance) bool {
			return len(f) == 3 && f[0].Running == "2" && f[1].Running == "2" && f[2].Refused == "2"
		})
		if c := fleet[2]; c.Name != "c" || c.Running != "1" || !strings.Contains(c.Reason, "user") {
			t.Errorf("instance c: %+v; want it running 1, having refused 2 for its user key", c)
		}
		stops["b"]()
		waitFleet(t, client, key, "b to leave the fleet", func(f []Instance) bool {
			return len(f) == 2 && f[0].Name == "a" && f[1].Name == "c"
		})
		if _, err := PushWith(t.Context(), client, key, "limits.yaml", doc("1.1"), PushOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		waitFleet(t, client, key, "the forced version 1.1", func(f []Instance) bool {
			return len(f) == 2 && f[0].Running == "1.1" && f[1].Running == "1.1" && f[1].Refused == ""
		})
		if n := strings.Count(logs.String(), "pushed with force"); n != 2 {
			t.Errorf("%d instances logged the forced push; want 2 (a and c):\n%s", n, logs.String())
		}
	})
}

// TestFleetHashOutlivesEveryRecord: the fleet hash expires when no instance renews its record,
// and each record set the hash's expiry to ten of its own lifetimes. Instances of different
// heartbeats (a rollout that changes WithHeartbeat, a canary) cut each other's short: after
// one of a 10 ms heartbeat recorded, the hash expired within 0.3 s, taking with it the record
// of one of a 1 h heartbeat, alive and renewing it only hourly, so that status and push saw no
// instance watching (found by a review). A record now only lengthens the hash's life.
func TestFleetHashOutlivesEveryRecord(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient) {
		key := redistest.Prefix(t) + "rules"
		if err := record(t.Context(), client, key, Instance{Name: "slow", Running: "1"}, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := record(t.Context(), client, key, Instance{Name: "fast", Running: "1"}, 10*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		ttl, err := client.PTTL(t.Context(), FleetKey(key)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl < 3*time.Hour {
			t.Errorf("the fleet hash expires in %v, before the record of the instance of a 1 h heartbeat (3 h)", ttl)
		}
		fleet, err := Fleet(t.Context(), client, key)
		if err != nil || len(fleet) != 2 {
			t.Errorf("Fleet: %+v, %v; want both instances", fleet, err)
		}
	})
}

// TestFleetNamesEndingInSeen: an instance's record is two fields of the fleet hash, <name> and
// <name>:seen. An instance named "a:seen" wrote its state over the field "a:seen" of instance
// a, and Fleet, reading a's time there, found it malformed and deleted both fields: a and
// "a:seen" both vanished from status and push's report (found by a review). A name ending in
// ":seen", or holding '%', is now written escaped, so that no two names share a field; every
// other name is written as before, which the status of earlier versions reads.
func TestFleetNamesEndingInSeen(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient) {
		key := redistest.Prefix(t) + "rules"
		names := []string{"a", "a:seen", "a:seen:seen", "b%3Aseen", "b%", "api-7:8080"}
		for _, name := range names {
			if err := record(t.Context(), client, key, Instance{Name: name, Running: "1"}, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 { // a reading deletes nothing of the live
			fleet, err := Fleet(t.Context(), client, key)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, in := range fleet {
				got = append(got, in.Name+"="+in.Running)
			}
			if want := "a=1 a:seen=1 a:seen:seen=1 api-7:8080=1 b%=1 b%3Aseen=1"; strings.Join(got, " ") != want {
				t.Fatalf("Fleet: %s\nwant %s", strings.Join(got, " "), want)
			}
		}
		fields, err := client.HKeys(t.Context(), FleetKey(key)).Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(fields)
		// a and api-7:8080 as earlier versions wrote them, which their status reads.
		if want := "a a%3Aseen a%3Aseen:seen a:seen a:seen%3Aseen a:seen%3Aseen:seen api-7:8080 api-7:8080:seen b%25 b%253Aseen b%253Aseen:seen b%25:seen"; strings.Join(fields, " ") != want {
			t.Errorf("the fleet hash's fields: %s\nwant %s", strings.Join(fields, " "), want)
		}
	})
}

// renewAfterRead runs renew once, after the first HGETALL the client sends: an instance
// recording its state between Fleet's reading of the hash and its deleting of the records
// gone.
type renewAfterRead struct {
	once  sync.Once
	renew func()
}

func (h *renewAfterRead) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *renewAfterRead) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *renewAfterRead) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "hgetall" {
			h.once.Do(h.renew)
		}
		return err
	}
}

// TestFleetKeepsARecordRenewedMeanwhile: Fleet read the hash, found a record expired, and
// deleted it: an instance that renewed its record in between (back from a pause, a slow
// heartbeat) vanished from status and push's report until its next heartbeat (found by a
// review). It now deletes, in one script, only the records still as it read them.
func TestFleetKeepsARecordRenewedMeanwhile(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient) {
		key := redistest.Prefix(t) + "rules"
		fk := FleetKey(key)
		// Two records that expired long ago (1970, on the server's clock): a's and gone's.
		for _, name := range []string{"a", "gone"} {
			if err := client.HSet(t.Context(), fk, name, `{"name":"`+name+`","running":"1"}`, name+":seen", "1000:2000").Err(); err != nil {
				t.Fatal(err)
			}
		}
		hook := &renewAfterRead{renew: func() {
			if err := record(context.Background(), client, key, Instance{Name: "a", Running: "2"}, time.Minute); err != nil {
				t.Error(err)
			}
		}}
		client.AddHook(hook)
		if _, err := Fleet(t.Context(), client, key); err != nil {
			t.Fatal(err)
		}
		fields, err := client.HKeys(t.Context(), fk).Result()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(fields)
		if got := strings.Join(fields, " "); got != "a a:seen" {
			t.Errorf("after Fleet, the fleet hash holds %q; want a's record, renewed after Fleet read it, and not gone's", got)
		}
		fleet, err := Fleet(t.Context(), client, key)
		if err != nil || len(fleet) != 1 || fleet[0].Name != "a" || fleet[0].Running != "2" {
			t.Errorf("Fleet: %+v, %v; want a, running 2", fleet, err)
		}
	})
}

// An instance's Age is read on the Redis server's clock, as its record was written: a record
// written 42 s before Fleet read it is 42 s old, whatever the reader's own clock says.
func TestFleetAgeOnTheServersClock(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient) {
		key := redistest.Prefix(t) + "rules"
		now, err := client.Time(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		seen := now.Add(-42 * time.Second).UnixMilli()
		fields := []any{"a", `{"name":"a","running":"1"}`, "a:seen", fmt.Sprintf("%d:%d", seen, seen+3_600_000)}
		if err := client.HSet(t.Context(), FleetKey(key), fields...).Err(); err != nil {
			t.Fatal(err)
		}
		fleet, err := Fleet(t.Context(), client, key)
		if err != nil || len(fleet) != 1 {
			t.Fatalf("Fleet: %+v, %v; want a", fleet, err)
		}
		if age := fleet[0].Age; age < 42*time.Second || age > 5*time.Minute {
			t.Errorf("Age %v; want 42 s, on the server's clock", age)
		}
	})
}

// TestRecordInstance: an instance of another kind recorded with RecordInstance is listed by
// Fleet beside the engines, with its kind, version, load time and health, and leaves the fleet
// three heartbeats after its last record; bad arguments are refused.
func TestRecordInstance(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	loaded := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	in := Instance{Name: "rls-1", Kind: "rls", Running: "sha256:abc", Loaded: loaded, Health: "serving"}
	if err := RecordInstance(t.Context(), client, key, in, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := RecordInstance(t.Context(), client, key, Instance{Name: "rls-2", Kind: "rls", Running: "sha256:def", Health: "not_serving"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	fleet, err := Fleet(t.Context(), client, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(fleet) != 2 {
		t.Fatalf("fleet %+v, want rls-1 and rls-2", fleet)
	}
	got := fleet[0]
	if got.Name != "rls-1" || got.Kind != "rls" || got.Running != "sha256:abc" || !got.Loaded.Equal(loaded) || got.Health != "serving" || got.Seen.IsZero() {
		t.Errorf("rls-1: %+v", got)
	}
	if got := fleet[1]; got.Name != "rls-2" || got.Health != "not_serving" || !got.Loaded.IsZero() {
		t.Errorf("rls-2: %+v", got)
	}
	// rls-1's record, of a 50 ms heartbeat, lives 150 ms (on Redis's clock).
	waitFleet(t, client, key, "rls-1 to leave the fleet", func(f []Instance) bool { return len(f) == 1 && f[0].Name == "rls-2" })
	for _, tc := range []struct {
		name      string
		client    redis.UniversalClient
		key       string
		in        Instance
		heartbeat time.Duration
		want      string
	}{
		{"no client", nil, key, in, time.Second, "needs a go-redis client"},
		{"no key", client, "", in, time.Second, "needs a key"},
		{"no name", client, key, Instance{Kind: "rls"}, time.Second, "needs the instance's Name"},
		{"no kind", client, key, Instance{Name: "x"}, time.Second, `of "x" needs a Kind`},
		{"no heartbeat", client, key, in, 0, "heartbeat 0s, want at least 1ms"},
	} {
		if err := RecordInstance(t.Context(), tc.client, tc.key, tc.in, tc.heartbeat); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
