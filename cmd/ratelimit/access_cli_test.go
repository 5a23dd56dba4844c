package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// accessDoc is a rules file with access lists and overrides: acme 10/min on export, 600/min
// elsewhere; monitor unlimited; a revoked key denied.
const accessDoc = `version: "1"
access:
  allow: [10.0.0.0/8, 10.1.0.0/16]
  deny_clients: [{api_key: revoked}]
rules:
  - name: export
    match: {pattern: "/export"}
    key: api_key
    policies: [{name: export-per-minute, rate: 60/min}]
  - name: api
    key: api_key
    policies: [{name: per-minute, rate: 60/min}]
overrides:
  - client: {api_key: acme}
    rule: export
    policies: [{name: export-per-minute, rate: 10/min}]
  - client: {api_key: acme}
    policies: [{name: per-minute, rate: 600/min}]
  - client: {api_key: monitor}
    unlimited: true
`

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// validate prints what is valid but changes nothing as warnings, and the file stays ok.
func TestValidateWarnsOfShadowedEntries(t *testing.T) {
	f := writeFile(t, "limits.yaml", accessDoc)
	cli(t, "validate", f).want(t, 0, "limits.yaml: ok, version 1, 2 rules",
		f+":3: access.allow: 10.1.0.0/16 is inside 10.0.0.0/8 (line 3): it changes nothing (warning: valid, but changes nothing)")
	bad := writeFile(t, "bad.yaml", strings.Replace(accessDoc, "10.1.0.0/16", "10.0.0.0/33", 1))
	cli(t, "validate", bad).want(t, 1, "", bad+":3: access.allow[1]:")
}

// inspect says which override decides a client's limits, and that a denied or unlimited
// client costs the store nothing.
func TestInspectNamesTheOverride(t *testing.T) {
	f := writeFile(t, "limits.yaml", accessDoc)
	addr := redistest.Addr(t)
	prefix := redistest.Prefix(t)
	inspect := func(rule, key string) result {
		return cli(t, "inspect", "-redis", addr, "-prefix", prefix, "-file", f, "-rule", rule, "-api-key", key)
	}
	r := inspect("export", "acme")
	r.want(t, 0, "limits    overrides: api_key=acme on rule export: export-per-minute 10/1m0s gcra (line 14)", "")
	row(t, r.stdout, "export-per-minute", "10 per 1m", "10", "allowed")
	r = inspect("api", "acme")
	r.want(t, 0, "limits    overrides: api_key=acme on every rule keyed by api_key: per-minute 600/1m0s gcra (line 17)", "")
	row(t, r.stdout, "per-minute", "600 per 1m", "600", "allowed")
	inspect("api", "monitor").want(t, 0, "limits    unlimited, without a store call: overrides: api_key=monitor on every rule keyed by api_key: unlimited (line 19)", "")
	inspect("api", "revoked").want(t, 0, "limits    denied, without a store call: access.deny_clients: api_key=revoked (line 4)", "")
	r = inspect("api", "other")
	if strings.Contains(r.stdout, "limits ") {
		t.Errorf("a client of the rule's own policies gets a limits line:\n%s", r.stdout)
	}
	row(t, r.stdout, "per-minute", "60 per 1m", "60", "allowed")
}

// push -dry-run says what changes in the access lists and the overrides, and writes nothing.
func TestPushDryRunShowsAccessAndOverrides(t *testing.T) {
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	v2 := strings.NewReplacer(`version: "1"`, `version: "2"`, "allow: [10.0.0.0/8, 10.1.0.0/16]", "allow: [10.0.0.0/8, 192.168.0.0/16]",
		"rate: 600/min", "rate: 900/min").Replace(accessDoc)
	files := write(t, "v1.yaml", accessDoc, "v2.yaml", v2)
	push := func(args ...string) result {
		return cli(t, append([]string{"push", "-wait", "0", "-redis", addr, "-key", key}, args...)...)
	}
	push(files[0]).want(t, 0, "version 1", "")
	r := push("-dry-run", files[1])
	r.want(t, 0, "~ (access): allow: + 192.168.0.0/16; allow: - 10.1.0.0/16", "")
	r.want(t, 0, "~ (overrides): ~ api_key=acme on every rule keyed by api_key: per-minute 600/1m0s gcra → per-minute 900/1m0s gcra", "")
}

// inspect's verdicts on a client the access lists deny, or let through unlimited, are the
// lists', not the store's: it said "next allowed" for a revoked key the guard refuses without
// a store call, under the line that said so.
func TestInspectNextOfDeniedAndUnlimitedClients(t *testing.T) {
	f := writeFile(t, "limits.yaml", accessDoc)
	addr, prefix := redistest.Addr(t), redistest.Prefix(t)
	inspect := func(key string) result {
		return cli(t, "inspect", "-redis", addr, "-prefix", prefix, "-file", f, "-rule", "api", "-api-key", key)
	}
	for key, want := range map[string]string{"revoked": "denied by the access lists", "monitor": "unlimited by the overrides"} {
		r := inspect(key)
		r.want(t, 0, "next      "+want+", without a store call", "")
		row(t, r.stdout, "per-minute", "60 per 1m", "60", want)
		if key == "revoked" && strings.Contains(r.stdout, "allowed") {
			t.Errorf("a denied client is allowed somewhere:\n%s", r.stdout)
		}
	}
}
