package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rls"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// TestServeReportsToTheFleet: two commands of different configurations over one Redis are in
// the fleet of the rules key -fleet-key names, each under its -instance, with its
// configuration's version (the one Config.Version gives its files), when it loaded it and its
// health, which is what `ratelimit status` lists; an edit is reported after its reload; a
// command without -redis, or with -fleet-key none, reports nothing.
func TestServeReportsToTheFleet(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	var paths, versions []string
	for i, n := range []string{"1", "2"} {
		dir := t.TempDir()
		path := filepath.Join(dir, "edge.yaml")
		data := "domain: edge\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: " + n + "}\n"
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := rls.LoadConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		paths, versions = append(paths, path), append(versions, cfg.Version())
		env := map[string]string{"RLS_INSTANCE": "rls-" + string(rune('a'+i)), "RLS_HEARTBEAT": "100ms"}
		start(t, func(k string) string { return env[k] }, "-config", path, "-redis", addr, "-prefix", redistest.Prefix(t), "-fleet-key", key, "-reload", "10ms")
	}
	fleet := waitRules(t, key, "both instances", func(f []rules.Instance) bool { return len(f) == 2 })
	for i, in := range fleet {
		if in.Name != []string{"rls-a", "rls-b"}[i] || in.Kind != "rls" || in.Running != versions[i] || in.Health != "serving" || in.Loaded.IsZero() {
			t.Errorf("instance %d: %+v, want rls-%c running %s, serving", i, in, 'a'+i, versions[i])
		}
	}
	if versions[0] == versions[1] {
		t.Fatalf("two configurations of one version %s", versions[0])
	}
	// rls-a's files edited to rls-b's contents: the same version, once reloaded.
	data, err := os.ReadFile(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	waitRules(t, key, "rls-a on rls-b's version", func(f []rules.Instance) bool {
		return len(f) == 2 && f[0].Running == versions[1] && f[0].Refused == ""
	})
	// A refused edit: the version of the files refused, and why (its first problem, and how many
	// more: one line, for status's table), beside the one it runs.
	if err := os.WriteFile(paths[0], []byte("domain: edge\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n  - key: j\n    rate_limit: {unit: hour}\n  - key: i\n    bad: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fleet = waitRules(t, key, "rls-a's refusal", func(f []rules.Instance) bool { return len(f) == 2 && f[0].Refused != "" })
	if a := fleet[0]; a.Running != versions[1] || !strings.HasPrefix(a.Refused, "sha256:") || a.Refused == versions[1] ||
		!strings.HasPrefix(a.Reason, "edge.yaml:4: invalid rate limit unit 'fortnight'") || !strings.HasSuffix(a.Reason, " (and 1 more)") {
		t.Errorf("after a refused edit: %+v, want it running %s, the refused version and its reason", a, versions[1])
	}
	// A fleet of no report: without -redis, and with -fleet-key none.
	other := redistest.Prefix(t) + "other"
	start(t, func(k string) string { return map[string]string{"RLS_INSTANCE": "mem"}[k] }, "-config", paths[1], "-fleet-key", other)
	r := start(t, func(k string) string { return map[string]string{"RLS_INSTANCE": "none"}[k] }, "-config", paths[1], "-redis", addr, "-fleet-key", "none")
	waitFor(t, r.log, "ratelimit-rls: serving")
	for _, k := range []string{other, rules.DefaultRedisKey} {
		f, err := rules.Fleet(t.Context(), client, k)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(f, func(in rules.Instance) bool { return in.Name == "mem" || in.Name == "none" }) {
			t.Errorf("the fleet of %s lists an instance that reports nothing: %+v", k, f)
		}
	}
	if strings.Contains(r.log.String(), "reporting to the fleet") {
		t.Errorf("-fleet-key none reports:\n%s", r.log)
	}
}

// waitRules polls the fleet of key until cond holds of it; the test's deadline bounds it.
func waitRules(t *testing.T, key, what string, cond func([]rules.Instance) bool) []rules.Instance {
	t.Helper()
	client := redistest.Standalone(t)
	for {
		f, err := rules.Fleet(t.Context(), client, key)
		if err != nil {
			t.Fatal(err)
		}
		if cond(f) {
			return f
		}
		if t.Context().Err() != nil {
			t.Fatalf("the fleet never had %s: %+v", what, f)
		}
		time.Sleep(10 * time.Millisecond) // a poll, not a deadline
	}
}

func TestFleetSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the error, or the fleet key, instance and heartbeat
	}{
		{[]string{"-redis", "x:1"}, "rl:rules 10s"},
		{[]string{"-redis", "x:1", "-fleet-key", "k", "-instance", "i", "-heartbeat", "2s"}, "k i 2s"},
		{[]string{"-redis", "x:1", "-fleet-key", "none"}, " 10s"},
		{[]string{"-fleet-key", "k"}, " 10s"}, // no Redis: no fleet
		{[]string{"-redis", "x:1", "-heartbeat", "0"}, `-heartbeat "0": a duration such as 10s, at least 1ms`},
	} {
		s, err := parseSettings(append([]string{"-config", "c"}, tc.args...), noEnv, &syncBuffer{})
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = s.fleetKey + " " + s.heartbeat.String()
			if s.instance == "" {
				got = "no instance name"
			} else if slices.Contains(tc.args, "-instance") {
				got = s.fleetKey + " " + s.instance + " " + s.heartbeat.String()
			}
		}
		if got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
}
