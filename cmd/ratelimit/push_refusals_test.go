package main

import (
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// TestPushDryRunExitsAsThePushWould: -dry-run exits 1 when the push it shows would be
// refused, and 0 when it would go through (version 3 over a stored 5 exited 0); -force is
// taken into account, except where no force helps (the stored version again, no version).
func TestPushDryRunExitsAsThePushWould(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	files := write(t, "v5.yaml", doc("5", "ip"), "v3.yaml", doc("3", "ip"), "v6.yaml", doc("6", "ip"),
		"v5b.yaml", "version: \"5\"\nrules:\n  - {name: all, key: ip, policies: [{name: m, limit: 9, window: 1m}]}\n",
		"none.yaml", "rules:\n  - {name: all, key: ip, policies: [{name: m, limit: 7, window: 1m}]}\n")
	push := func(args ...string) result {
		return cli(t, append([]string{"push", "-wait", "0", "-redis", addr, "-key", key}, args...)...)
	}
	push(files[0]).want(t, 0, "pushed v5.yaml", "")
	for _, tc := range []struct {
		args             []string
		code             int
		inStdout, stderr string
	}{
		{[]string{"-dry-run", files[1]}, 1, "refused without -force: version 3 is not newer than 5", "ratelimit push: -dry-run: the push would be refused; nothing was written"},
		{[]string{"-dry-run", "-force", files[1]}, 0, "forced: version 3 rolls back 5", ""},
		{[]string{"-dry-run", files[2]}, 0, "dry run: version 6 over version 5", ""},
		{[]string{"-dry-run", "-force", files[3]}, 1, "refused: version 5 is stored already", "the push would be refused"},
		{[]string{"-dry-run", "-force", files[4]}, 1, "refused: the document has no version", "the push would be refused"},
	} {
		push(tc.args...).want(t, tc.code, tc.inStdout, tc.stderr)
	}
	// A file without a version is not called one: its first line said "dry run: version
	// <hash>", the next that it had no version. Its refusal names the stored version to pass.
	r := push("-dry-run", files[4])
	r.want(t, 1, "dry run: no version (hash ", "the push would be refused")
	r.want(t, 1, "refused: the document has no version (its hash is ", "")
	r.want(t, 1, `give it a version: field, newer than the stored version "5"`, "")
	if strings.Contains(r.stdout, "dry run: version ") {
		t.Errorf("a dry run of a file without a version calls its hash a version:\n%s", r.stdout)
	}
	if v, _ := rules.StoredVersion(t.Context(), client, key); v != "5" {
		t.Errorf("after dry runs, version %q is stored; want 5", v)
	}
	// Over nothing stored, there is no stored version to be newer than.
	r = cli(t, "push", "-dry-run", "-redis", addr, "-key", key+":empty", files[4])
	r.want(t, 1, "dry run: no version (hash ", "the push would be refused")
	if strings.Contains(r.stdout, "newer than the stored") {
		t.Errorf("a dry run over nothing stored asks for a version newer than the stored one:\n%s", r.stdout)
	}
}

// TestPushWaitNegative: a negative -wait is a usage error, as a negative -timeout is; it
// pushed and then did not wait.
func TestPushWaitNegative(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	file := write(t, "v5.yaml", doc("5", "ip"))[0]
	r := cli(t, "push", "-wait", "-1s", "-redis", addr, "-key", key, file)
	r.want(t, 2, "", "ratelimit push: -wait must be 0 or more (see ratelimit push -h)")
	if v, _ := rules.StoredVersion(t.Context(), client, key); v != "" {
		t.Errorf("after a usage error, version %q is stored; want none", v)
	}
}

// TestPushUnversioned: a file without a version: field is refused by push, forced or not,
// and validate says it has no version and push needs one; before, its hash was ordered as a
// version (one-line edits refused as "not newer" with advice to force a rollback) and it
// replaced a dated version without a word.
func TestPushUnversioned(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	files := write(t, "dated.yaml", doc("2026-11-23", "ip"),
		"edit.yaml", "rules:\n  - {name: all, key: ip, policies: [{name: m, limit: 7, window: 1m}]}\n")
	push := func(args ...string) result {
		return cli(t, append([]string{"push", "-wait", "0", "-redis", addr, "-key", key}, args...)...)
	}
	push(files[0]).want(t, 0, "version 2026-11-23", "")
	for _, args := range [][]string{{files[1]}, {"-force", files[1]}} {
		r := push(args...)
		r.want(t, 1, "", "rules: the document has no version: field")
		r.want(t, 1, "", `write one at the top of the document, such as version: "2026-12-01.1"`)
	}
	if v, _ := rules.StoredVersion(t.Context(), client, key); v != "2026-11-23" {
		t.Errorf("after unversioned pushes, version %q is stored; want 2026-11-23", v)
	}
	set, err := rules.Parse("edit.yaml", []byte("rules:\n  - {name: all, key: ip, policies: [{name: m, limit: 7, window: 1m}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cli(t, "validate", files[1]).want(t, 0, files[1]+": ok, no version (hash "+set.Version()+"; ratelimit push needs a version: field), 1 rule\n", "")
}

// TestNoRules: a file without rules is refused by validate and push unless it says
// allow_empty: true; then validate, push and status say loudly that it limits nothing.
func TestNoRules(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	if _, err := rules.Push(t.Context(), client, key, "limits.yaml", []byte(doc("1", "ip"))); err != nil {
		t.Fatal(err)
	}
	watchingInstance(t, client, key, "api-1")

	files := write(t, "empty.yaml", "version: \"7\"\nrules: []\n", "meant.yaml", "version: \"8\"\nallow_empty: true\nrules: []\n")
	cli(t, "validate", files[0]).want(t, 1, "", files[0]+":2: rules: no rules: every request would go unlimited; write allow_empty: true")
	cli(t, "validate", files[1]).want(t, 0, files[1]+": ok, version 8, no rules (allow_empty: true): it limits nothing\n", "")
	cli(t, "push", "-wait", "0", "-redis", addr, "-key", key, files[0]).want(t, 1, "", "write allow_empty: true")
	r := cli(t, "push", "-wait", "20s", "-redis", addr, "-key", key, files[1])
	r.want(t, 0, "pushed meant.yaml to "+key+": version 8, no rules (allow_empty: true): every instance that applies it limits nothing\n", "")
	r.want(t, 0, "applied on 1 of 1 instances", "")
	cli(t, "status", "-redis", addr, "-key", key).want(t, 0, "api-1     8 (no rules: limits nothing)", "")
}

// TestDurationFlagsTakeDays: -wait and -timeout read durations as the rules files do, days
// too, with one reader (ratelimit.ParseDuration); a bad one is a usage error.
func TestDurationFlagsTakeDays(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	file := write(t, "v5.yaml", doc("5", "ip"))[0]
	cli(t, "push", "-wait", "1d", "-timeout", "1d", "-redis", addr, "-key", key, file).want(t, exitWaiting, "no instance is watching", "")
	if v, _ := rules.StoredVersion(t.Context(), client, key); v != "5" {
		t.Errorf("after push -wait 1d, version %q is stored; want 5", v)
	}
	for _, tc := range []struct{ flag, value, want string }{
		{"-wait", "1x", `ratelimit push: invalid value "1x" for flag -wait: duration "1x": want a duration such as 1s, 1m30s, 250ms or 1d`},
		{"-wait", "-1d", "ratelimit push: -wait must be 0 or more"},
		{"-timeout", "1.5d", `ratelimit push: invalid value "1.5d" for flag -timeout: duration "1.5d": want a duration`},
	} {
		cli(t, "push", tc.flag, tc.value, "-redis", addr, "-key", key, file).want(t, 2, "", tc.want)
	}
}

// -dry-run -force answers as the push -force does, for versions that compare equal but are
// spelled apart (1.00 over 1.0): the dry run said the push would be refused (exit 1), and the
// push went through (exit 0).
func TestDryRunForceAgreesOnEqualVersions(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	files := write(t, "a.yaml", doc("1.0", "ip"), "b.yaml", doc("1.00", "ip"))
	push := func(args ...string) result {
		return cli(t, append([]string{"push", "-wait", "0", "-redis", addr, "-key", key}, args...)...)
	}
	push(files[0]).want(t, 0, "pushed a.yaml", "")
	dry := push("-dry-run", "-force", files[1])
	real := push("-force", files[1])
	v, _ := rules.StoredVersion(t.Context(), client, key)
	if dry.code != real.code || real.code != 0 || v != "1.00" {
		t.Errorf("-dry-run -force exit %d (%q), push -force exit %d (%q); stored now %q", dry.code, dry.stdout, real.code, real.stdout, v)
	}
}
