package main

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// doc is a small rules document of a version, keyed by key.
func doc(version, key string) string {
	return "version: \"" + version + "\"\nrules:\n  - {name: all, key: " + key + ", policies: [{name: m, limit: 5, window: 1m}]}\n"
}

// A push that would silently disable or roll back limiting is refused, and says which flag
// overrides; -dry-run shows the change rule by rule and writes nothing.
func TestPushRefusesAndDryRun(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	files := write(t, "empty.yaml", "version: \"7\"\nrules: []\n", "v8.yaml", doc("8", "ip"), "v7.yaml", doc("7", "ip"),
		"v9.yaml", "version: \"9\"\nrules:\n  - {name: all, key: [ip, method], policies: [{name: m, limit: 10, window: 1m}]}\n")
	push := func(args ...string) result {
		return cli(t, append([]string{"push", "-wait", "0", "-redis", addr, "-key", key}, args...)...)
	}
	push(files[0]).want(t, 1, "", "write allow_empty: true at the top of the document if that is meant")
	push(files[1]).want(t, 0, "version 8", "")
	push(files[2]).want(t, 1, "", `holds version "8", the document is version "7"`)
	push("-expect", "6", files[3]).want(t, 1, "", `holds version "8", not "6"`)
	if v, _ := rules.StoredVersion(t.Context(), client, key); v != "8" {
		t.Fatalf("after the refusals, version %q is stored; want 8", v)
	}
	r := push("-dry-run", files[3])
	r.want(t, 0, "dry run: version 9 over version 8", "")
	r.want(t, 0, "~ all: key: ip → ip+method; policies[m].limit: 5 → 10", "")
	push("-dry-run", files[2]).want(t, 1, "refused without -force: version 7 is not newer than 8", "the push would be refused")
	if v, _ := rules.StoredVersion(t.Context(), client, key); v != "8" {
		t.Fatalf("after dry runs, version %q is stored; want 8", v)
	}
	wait := func(args ...string) result {
		return cli(t, append([]string{"push", "-redis", addr, "-key", key}, args...)...)
	}
	wait("-force", files[2]).want(t, 3, "no instance is watching", "")
	wait("-expect", "7", files[3]).want(t, 3, "pushed v9.yaml", "")
}

// watchingInstance starts an instance named name on the rules at key, watching them with
// WatchRedis until the test ends, recording its state every 100 ms; it returns once the
// instance is in the fleet.
func watchingInstance(t *testing.T, client redis.UniversalClient, key, name string, opts ...rules.StartOption) {
	t.Helper()
	opts = append([]rules.StartOption{rules.WithInstanceName(name), rules.WithHeartbeat(100 * time.Millisecond),
		rules.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	e, err := rules.OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.WatchRedis(ctx, client, key) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		f, _ := rules.Fleet(t.Context(), client, key)
		if slices.ContainsFunc(f, func(in rules.Instance) bool { return in.Name == name }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s never reported", name)
		}
	}
}

// push waits for the fleet and reports what each instance did: a version one instance refuses
// (it has no user key) is reported refused, with the reason, and push exits 1; status lists
// every live instance.
func TestPushWaitsForTheFleet(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	if _, err := rules.Push(t.Context(), client, key, "limits.yaml", []byte(doc("1", "ip"))); err != nil {
		t.Fatal(err)
	}
	watchingInstance(t, client, key, "api-1", rules.WithUserKey(appUserKey{}))
	watchingInstance(t, client, key, "api-2")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if f, _ := rules.Fleet(t.Context(), client, key); len(f) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the instances never reported")
		}
	}
	users := write(t, "users.yaml", doc("2", "user"))[0]
	r := cli(t, "push", "-wait", "20s", "-redis", addr, "-key", key, users)
	r.want(t, 1, "applied on 1 of 2 instances; refused on 1: api-2: ", "")
	if !strings.Contains(r.stdout, "user") {
		t.Errorf("the refusal does not say why:\n%s", r.stdout)
	}
	s := cli(t, "status", "-redis", addr, "-key", key)
	s.want(t, 1, "stored: version 2 at "+key, "")
	s.want(t, 1, "1 of 2 instances run the stored version", "")
	for _, line := range []string{"api-1", "api-2"} {
		if !strings.Contains(s.stdout, line) {
			t.Errorf("status does not list %s:\n%s", line, s.stdout)
		}
	}
}

// The command reaches Redis as production does: an ACL user with a password on a non-zero
// database, by URL; Sentinel by master name; every error names the address, and -timeout
// bounds every call.
func TestRedisURLs(t *testing.T) {
	addr := redistest.Private(t)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	for _, cmd := range [][]any{{"ACL", "SETUSER", "ops", "on", ">s3cret", "~*", "&*", "+@all"}, {"ACL", "SETUSER", "default", "off"}} {
		if err := admin.Do(t.Context(), cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	admin.Close()
	good := write(t, "limits.yaml", goodYAML)[0]
	url := "redis://ops:s3cret@" + addr + "/2"
	cli(t, "push", "-wait", "0", "-redis", url, good).want(t, 0, "pushed limits.yaml to rl:rules", "")
	cli(t, "version", "-redis", url).want(t, 0, "version    v1", "")
	db := func(n int) int64 {
		c := redis.NewClient(&redis.Options{Addr: addr, Username: "ops", Password: "s3cret", DB: n})
		defer c.Close()
		k, err := c.DBSize(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if db(2) == 0 || db(0) != 0 {
		t.Errorf("keys on db 2: %d, on db 0: %d; want the rules on db 2 only", db(2), db(0))
	}
	r := cli(t, "version", "-redis", "redis://ops:wrong@"+addr+"/2")
	r.want(t, 1, "", "WRONGPASS")
	if strings.Contains(r.stderr, "wrong") || !strings.Contains(r.stderr, addr) {
		t.Errorf("an error with a wrong password: %q; want the address named, the password not", r.stderr)
	}
	cli(t, "version", "-redis", "rediss://ops:s3cret@"+addr+"/2", "-timeout", "2s").want(t, 1, "", addr)

	proxy := faultproxy.Start(t, addr)
	proxy.BlackHole()
	r = cli(t, "version", "-redis", proxy.Addr(), "-timeout", "300ms")
	r.want(t, 1, "", proxy.Addr())
	r.want(t, 1, "", "-timeout 300ms")
}

// Through Sentinel: the command finds the master by name.
func TestRedisSentinel(t *testing.T) {
	g := redistest.Sentinel(t)
	good := write(t, "limits.yaml", goodYAML)[0]
	sentinels := strings.Join(g.SentinelAddrs, ",")
	cli(t, "push", "-wait", "0", "-redis", sentinels, "-sentinel-master", g.MasterName, good).want(t, 0, "pushed limits.yaml", "")
	cli(t, "version", "-redis", sentinels, "-sentinel-master", g.MasterName).want(t, 0, "version    v1", "")
}

// TestStatusRefusedUnderTheVersionRunning: an instance that started on its default rules of
// version 1, while Redis held none, and refuses the fleet's first push, also of version 1 (a
// rule keyed by user, and it has no user key), runs a version 1 that is not the stored one.
// status (and push's report) read "running 1" first and reported it running the stored
// version ("1 of 1 instances run the stored version", exit 0) beside its recorded refusal
// (found by a review). A refusal of the stored version now wins.
func TestStatusRefusedUnderTheVersionRunning(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	e, err := rules.OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key, rules.WithInstanceName("api-1"),
		rules.WithDefaultRules("default.yaml", []byte(doc("1", "ip"))), rules.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil || e.Version() != "1" {
		t.Fatalf("OpenRedis on the default rules: %v, %v", e, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.WatchRedis(ctx, client, key) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if f, _ := rules.Fleet(t.Context(), client, key); len(f) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the instance never reported")
		}
	}
	users := write(t, "users.yaml", doc("1", "user"))[0]
	cli(t, "push", "-wait", "0", "-redis", addr, "-key", key, users).want(t, 0, "pushed users.yaml", "")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if f, _ := rules.Fleet(t.Context(), client, key); len(f) == 1 && f[0].Refused == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the instance never recorded its refusal")
		}
	}
	s := cli(t, "status", "-redis", addr, "-key", key)
	s.want(t, 1, "0 of 1 instances run the stored version", "refused version 1")
}

// TestPushWaitCountsOnlyRecordsAfterThePush: push -wait counted an instance as having applied
// the version it pushed when its record, made before the push, named that version: an
// instance on its default rules of version 1 was "applied" by the fleet's first push of a
// version 1 before it had read it, and before it recorded that it refused it (exit 0; found by
// a review). Only a record made after the push, on the Redis server's clock, answers it: an
// instance that has not recorded since is "no answer yet", and push exits 3.
func TestPushWaitCountsOnlyRecordsAfterThePush(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	// The record of an instance on default rules of version 1, made before the push; the
	// instance does not read the push within the wait (a pause, a slow network).
	now, err := client.Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	seen := now.UnixMilli() - 1
	if err := client.HSet(t.Context(), rules.FleetKey(key), "api-1", `{"name":"api-1","running":"1"}`,
		"api-1:seen", fmt.Sprintf("%d:%d", seen, seen+60_000)).Err(); err != nil {
		t.Fatal(err)
	}
	users := write(t, "users.yaml", doc("1", "user"))[0]
	r := cli(t, "push", "-wait", "300ms", "-redis", addr, "-key", key, users)
	r.want(t, 3, "applied on 0 of 1 instances; no answer yet from 1: api-1 (running 1, no record since the push)", "not yet applied on 1 of 1 instances")
}

// TestStatusWithNoRulesStored: instances watching a key that holds no rules (none pushed
// yet, or a Redis restarted without its data) run rules of their own and refused nothing.
// status matched their empty refusal with the empty stored version and said "1 of 1
// instances refused version " with exit 1, the code of a refused push (found running a
// fleet whose Redis was restarted without persistence). It says no rules are stored, and
// exits 3, as when the fleet has not caught up.
func TestStatusWithNoRulesStored(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	now, err := client.Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	seen := now.UnixMilli()
	if err := client.HSet(t.Context(), rules.FleetKey(key), "api-1", `{"name":"api-1","running":"1"}`,
		"api-1:seen", fmt.Sprintf("%d:%d", seen, seen+60_000)).Err(); err != nil {
		t.Fatal(err)
	}
	s := cli(t, "status", "-redis", addr, "-key", key)
	s.want(t, 3, "no rules stored: 1 instances run rules of their own", "no rules stored at "+key)
	if strings.Contains(s.stdout+s.stderr, "refused") {
		t.Errorf("status with no rules stored says an instance refused them:\n%s%s", s.stdout, s.stderr)
	}
}

// status says how long ago each instance recorded its state on the Redis server's clock, as
// the record was written: a record 42 s old is "42s ago", whatever the operator's clock says.
func TestStatusSeenOnTheServersClock(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	now, err := client.Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	seen := now.Add(-42 * time.Second).UnixMilli()
	if err := client.HSet(t.Context(), rules.FleetKey(key), "api-1", `{"name":"api-1","running":"1"}`,
		"api-1:seen", fmt.Sprintf("%d:%d", seen, seen+3_600_000)).Err(); err != nil {
		t.Fatal(err)
	}
	s := cli(t, "status", "-redis", addr, "-key", key)
	m := regexp.MustCompile(`api-1\s+1\s+-\s+(\S+) ago`).FindStringSubmatch(s.stdout)
	if m == nil {
		t.Fatalf("status printed\n%s\nwant a line for api-1", s.stdout)
	}
	if ago, err := time.ParseDuration(m[1]); err != nil || ago < 42*time.Second || ago > 5*time.Minute {
		t.Errorf("status says api-1 was seen %s ago; want 42s, on the server's clock", m[1])
	}
}

// A push of the version an instance runs, read from the stored document, is refused when
// the key holds nothing (deleted, evicted, a Redis restarted without its data): the instance
// never reads that version again, so it kept the old document while push counted its record
// as applied, "applied on 1 of 1", exit 0. The same document again is pushed, and applied:
// the instance runs what it says.
func TestPushOfTheRunningVersionOverNothingStored(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	if _, err := rules.Push(t.Context(), client, key, "limits.yaml", []byte(doc("1", "ip"))); err != nil {
		t.Fatal(err)
	}
	watchingInstance(t, client, key, "api-1") // in the fleet once it has read version 1
	if err := client.Del(t.Context(), key).Err(); err != nil {
		t.Fatal(err)
	}
	files := write(t, "changed.yaml", "version: \"1\"\nrules:\n  - {name: all, key: ip, policies: [{name: m, limit: 500, window: 1m}]}\n",
		"same.yaml", doc("1", "ip"))
	r := cli(t, "push", "-wait", "20s", "-redis", addr, "-key", key, files[0])
	r.want(t, 1, "", `instance api-1 runs version "1"`)
	if v, err := rules.StoredVersion(t.Context(), client, key); err == nil {
		t.Errorf("the refused push stored version %q", v)
	}
	cli(t, "push", "-dry-run", "-redis", addr, "-key", key, files[0]).want(t, 1, "refused: version 1 runs, as read from Redis, on api-1: other rules", "the push would be refused")
	cli(t, "push", "-wait", "20s", "-redis", addr, "-key", key, files[1]).want(t, 0, "applied on 1 of 1 instances", "")
}

// A push that is not forced goes on when it cannot read the fleet (an ACL that allows the
// rules key alone), unchecked against the versions instances run: it says so.
func TestPushOverAnUnreadableFleetWarns(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	if err := client.Set(t.Context(), rules.FleetKey(key), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	users := write(t, "users.yaml", doc("1", "user"))[0]
	cli(t, "push", "-wait", "0", "-redis", addr, "-key", key, users).want(t, 0, "pushed users.yaml", "warning: the fleet could not be read")
}
