package main

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// The documents of the tests.
const (
	// goodYAML has a rule keyed by user, which a file alone cannot validate.
	goodYAML = `version: v1
rules:
  - name: api
    key: api_key
    policies:
      - {name: per-hour, algorithm: sliding_window_log, limit: 5, window: 1h}
  - name: account
    match: {pattern: "/account/"}
    key: user
    policies:
      - {limit: 2, window: 1h}
`
	goodJSON = `{"version": "v2", "rules": [{"name": "default", "key": "ip", "policies": [{"limit": 10, "window": "1m"}]}]}`
	badYAML  = `version: v3
rules:
  - name: api
    key: [api_key, session]
    policies:
      - {limit: 5, window: 1x}
`
)

// write writes the files of a test, name then contents, and returns their paths.
func write(t *testing.T, nameThenData ...string) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i := 0; i < len(nameThenData); i += 2 {
		p := filepath.Join(dir, nameThenData[i])
		if err := os.WriteFile(p, []byte(nameThenData[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// appUserKey is the application's user key in the tests, which the command does not know.
type appUserKey struct{}

// fetch returns the rules stored at key, or the error.
func fetch(t *testing.T, client redis.UniversalClient, key string) (*rules.Stored, error) {
	t.Helper()
	return rules.Fetch(t.Context(), client, key, rules.WithUserKey(appUserKey{}))
}

// TestValidate: each file's version and number of rules, or every problem of it; the exit
// code is 1 when any file fails, and the others are checked all the same.
func TestValidate(t *testing.T) {
	files := write(t, "limits.yaml", goodYAML, "limits.json", goodJSON, "bad.yaml", badYAML)
	good, goodJ, bad := files[0], files[1], files[2]

	cli(t, "validate", good, goodJ).want(t, 0, good+": ok, version v1, 2 rules\n"+goodJ+": ok, version v2, 1 rule\n", "")

	r := cli(t, "validate", bad, filepath.Join(t.TempDir(), "missing.yaml"), good)
	r.want(t, 1, good+": ok, version v1, 2 rules", bad+`:4: rules[0].key[1]: unknown key "session"; want ip, route, method, user, api_key or header:<Name>
`+bad+`:6: rules[0].policies[0].window: "1x" is not a duration (e.g. 1s, 1m30s, 1d)
`)
	r.want(t, 1, "", "missing.yaml: no such file or directory")
	if strings.Contains(r.stdout, bad) {
		t.Errorf("stdout mentions the bad file:\n%s", r.stdout)
	}

	huge := write(t, "huge.yaml", "# "+strings.Repeat("x", rules.MaxFileSize))[0]
	cli(t, "validate", huge).want(t, 1, "", "huge.yaml: the file is")
	cli(t, "validate", t.TempDir()).want(t, 1, "", "is a directory")
}

// onRedis runs f against the real standalone server and the real Cluster; addr is what -redis
// takes: the server's address, or the Cluster's seed nodes.
func onRedis(t *testing.T, f func(t *testing.T, client redis.UniversalClient, addr string)) {
	t.Run("standalone", func(t *testing.T) { f(t, redistest.Standalone(t), redistest.Addr(t)) })
	t.Run("cluster", func(t *testing.T) {
		c := redistest.Cluster(t)
		f(t, c, strings.Join(c.Options().Addrs, ","))
	})
}

// TestPushVersion: push stores a valid file (rules keyed by user too) under its base name, and
// version shows it; a file that is invalid, missing or too large writes nothing.
func TestPushVersion(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient, addr string) {
		key := redistest.Prefix(t) + "rules"
		files := write(t, "limits.yaml", goodYAML, "limits.json", goodJSON, "bad.yaml", badYAML)

		cli(t, "version", "-redis", addr, "-key", key).want(t, 1, "", `: no rules are stored at Redis key "`+key+`"`)

		cli(t, "push", "-wait", "0", "-redis", addr, "-key", key, files[0]).want(t, 0, "pushed limits.yaml to "+key+": version v1, 2 rules\n", "")
		stored, err := fetch(t, client, key)
		if err != nil || stored.Version != "v1" || stored.Name != "limits.yaml" || string(stored.Document) != goodYAML {
			t.Fatalf("after push, Fetch = %+v, %v; want v1 from limits.yaml as written", stored, err)
		}
		r := cli(t, "version", "-redis", addr, "-key", key)
		r.want(t, 0, "version    v1\nfile       limits.yaml\npushed at  "+stored.PushedAt.UTC().Format(time.RFC3339Nano)+"\nrules      2\nkey        "+key+"\n", "")

		for _, tc := range []struct {
			args     []string
			code     int
			inStderr string
		}{
			{[]string{files[2]}, 1, files[2] + ":6: rules[0].policies[0].window"},
			{[]string{filepath.Join(t.TempDir(), "missing.yaml")}, 1, "missing.yaml: no such file or directory"},
			{[]string{t.TempDir()}, 1, "is a directory"},
			{[]string{"-nope", files[1]}, 2, "flag provided but not defined: -nope"},
			{[]string{files[1], files[0]}, 2, "unexpected arguments"},
		} {
			args := append([]string{"push", "-redis", addr, "-key", key}, tc.args...)
			cli(t, args...).want(t, tc.code, "", tc.inStderr)
			if s, err := fetch(t, client, key); err != nil || s.Version != "v1" {
				t.Errorf("after ratelimit %q the stored rules are %+v, %v; want v1 as they were", args, s, err)
			}
		}

		// Flags after the file, and JSON.
		cli(t, "push", "-wait", "0", files[1], "-redis", addr, "-key", key).want(t, 0, "pushed limits.json to "+key+": version v2, 1 rule", "")
		cli(t, "version", "-redis", addr, "-key", key).want(t, 0, "version    v2\nfile       limits.json\n", "")
	})
}

// TestInvalidPushWritesNothing: an invalid file pushed where no rules are stored creates no key.
func TestInvalidPushWritesNothing(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	bad := write(t, "bad.yaml", badYAML)[0]
	cli(t, "push", "-wait", "0", "-redis", redistest.Addr(t), "-key", key, bad).want(t, 1, "", "bad.yaml:4: rules[0].key[1]: unknown key")
	if _, err := fetch(t, client, key); !errors.Is(err, rules.ErrNoRules) {
		t.Errorf("Fetch after an invalid push: %v; want ErrNoRules", err)
	}
}

// TestClusterSeed: -cluster makes one address a Cluster's seed node, through which the rules
// pushed to the whole Cluster are read.
func TestClusterSeed(t *testing.T) {
	client := redistest.Cluster(t)
	key := redistest.Prefix(t) + "rules"
	good := write(t, "limits.yaml", goodYAML)[0]
	addrs := client.Options().Addrs
	cli(t, "push", "-wait", "0", "-redis", strings.Join(addrs, ","), "-key", key, good).want(t, 0, "version v1", "")
	for _, seed := range addrs {
		cli(t, "version", "-redis", seed, "-cluster", "-key", key).want(t, 0, "version    v1\n", "")
	}
}

// TestPassword: -password, or else REDIS_PASSWORD, authenticates.
func TestPassword(t *testing.T) {
	addr := redistest.Private(t) // a server of its own: the others' tests use no password
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	if err := admin.ConfigSet(t.Context(), "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	good := write(t, "limits.yaml", goodYAML)[0]
	cli(t, "push", "-wait", "0", "-redis", addr, good).want(t, 1, "", ": rules: pushing to Redis key \"rl:rules\": NOAUTH")
	cli(t, "push", "-wait", "0", "-redis", addr, "-password", "s3cret", good).want(t, 0, "pushed limits.yaml to rl:rules: version v1", "")
	t.Setenv("REDIS_PASSWORD", "s3cret")
	cli(t, "version", "-redis", addr).want(t, 0, "version    v1\n", "")
	cli(t, "version", "-redis", addr, "-password", "wrong").want(t, 1, "", "WRONGPASS")
}

// TestRedisDown: a server that refuses connections is a failure on one line, after no panic.
func TestRedisDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // now nothing listens there
	good := write(t, "limits.yaml", goodYAML)[0]
	for _, args := range [][]string{
		{"push", "-redis", addr, good},
		{"version", "-redis", addr},
		{"inspect", "-redis", addr, "-rule", "api", "hdr:x-api-key:abc"},
		{"inspect", "-redis", addr, "-file", good, "-rule", "api", "hdr:x-api-key:abc"},
		{"reset", "-redis", addr, "-file", good, "-rule", "api", "hdr:x-api-key:abc"},
	} {
		r := cli(t, args...)
		r.want(t, 1, "", "connection refused")
		if n := strings.Count(r.stderr, "\n"); n != 1 || !strings.HasPrefix(r.stderr, "ratelimit "+args[0]+": ") {
			t.Errorf("ratelimit %q: stderr of %d lines; want one, naming the command:\n%s", args, n, r.stderr)
		}
	}
}

// TestValidateDays: a window of days validates as a rate of days does ("window: 1d" was refused
// while "rate: 1000/day" was accepted), and one beyond 366 days names that bound.
func TestValidateDays(t *testing.T) {
	files := write(t, "days.yaml", "version: \"9\"\nrules:\n  - name: all\n    key: ip\n    policies:\n      - {name: d, limit: 5, window: 1d}\n      - {name: w, limit: 50, window: 7d12h}\n",
		"long.yaml", "version: \"9\"\nrules:\n  - name: all\n    key: ip\n    policies:\n      - {name: d, limit: 5, window: 367d}\n")
	cli(t, "validate", files[0]).want(t, 0, files[0]+": ok, version 9, 1 rule\n", "")
	cli(t, "validate", files[1]).want(t, 1, "", files[1]+`:6: rules[0].policies[0].window: ratelimit: invalid policy "d": Window is 367d; it must be at most 366 days`)
}
