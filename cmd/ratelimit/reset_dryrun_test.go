package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// stateApp pushes stateYAML to a key of the test's own on the standalone server, and returns
// the application over that server with a prefix of the test's own, and the -redis and -key
// of the rules.
func stateApp(t *testing.T) (h http.Handler, addr, key, prefix string) {
	t.Helper()
	addr, key, prefix = redistest.Addr(t), redistest.Prefix(t)+"rules", redistest.Prefix(t)
	file := write(t, "limits.yaml", stateYAML)[0]
	cli(t, "push", "-wait", "0", "-redis", addr, "-key", key, file).want(t, 0, "version s1", "")
	return app(t, redistest.Standalone(t), prefix), addr, key, prefix
}

// TestResetThatDeletedNothingSaysSo: the application's store has a prefix; the operator runs
// reset without -prefix (or without -compact, or with an identity the key function never
// made). Nothing is deleted and the client stays refused: the command says so on standard
// error, naming what to check (it printed its table of deleted keys as if it had; found by a
// review).
func TestResetThatDeletedNothingSaysSo(t *testing.T) {
	h, addr, key, _ := stateApp(t)
	send(h, 6, apiRequest)                                                               // 5 per hour: the sixth is refused
	r := cli(t, "reset", "-redis", addr, "-key", key, "-rule", "api", "-api-key", "abc") // -prefix forgotten
	t.Logf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if code := send(h, 1, apiRequest); code != http.StatusTooManyRequests {
		t.Fatalf("the application's client: %d; the reset under the wrong prefix reached it?", code)
	}
	if !strings.Contains(r.stderr, "has used nothing under these policies at these keys, so nothing was reset") ||
		!strings.Contains(r.stderr, "check -prefix") {
		t.Errorf("reset deleted no key, the client is still refused, and the command said:\n%s%s", r.stdout, r.stderr)
	}
}

// TestDryRunForeseesExpect: -dry-run reports the refusal -expect would meet: with version 8
// stored, "push -dry-run -expect 6 v9.yaml" printed a clean diff, and the same push without
// -dry-run was refused (found by a review).
func TestDryRunForeseesExpect(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	files := write(t, "v8.yaml", doc("8", "ip"), "v9.yaml", doc("9", "ip"))
	if _, err := rules.Push(t.Context(), client, key, "v8.yaml", []byte(doc("8", "ip"))); err != nil {
		t.Fatal(err)
	}
	push := func(args ...string) result {
		return cli(t, append([]string{"push", "-wait", "0", "-redis", addr, "-key", key}, args...)...)
	}
	push("-dry-run", "-expect", "6", files[1]).want(t, 1, `refused without -force: the stored version is "8", not the -expect "6"`, "the push would be refused")
	push("-dry-run", "-expect", "8", files[1]).want(t, 0, "dry run: version 9 over version 8", "")
	push("-expect", "6", files[1]).want(t, 1, "", "not the one the push started from")
}

// TestInspectThatFindsNothingSaysSo: inspect with a -prefix, -compact or -hash other than the
// application's reads keys that hold nothing, and reported a full quota for a client the
// application refuses, exit 0 and not a word, where reset says so: it now warns as reset does,
// on standard error, exit 0, naming what to check. With the application's flags it finds the
// quota used, and says nothing.
func TestInspectThatFindsNothingSaysSo(t *testing.T) {
	h, addr, key, prefix := stateApp(t)
	search := func() *http.Request { return httptest.NewRequest("GET", "/search/shoes", nil) } // from 192.0.2.1
	if code := send(h, 4, search); code != http.StatusTooManyRequests {
		t.Fatalf("search: status %d after 4 requests; want 429", code)
	}
	const (
		nothing = "has used nothing under these policies at these keys"
		check   = "if the application refuses it, its state is elsewhere: check -prefix, -compact, -hash and the identity"
	)
	flags := []string{"-redis", addr, "-key", key, "-rule", "search", "-ip", "192.0.2.1", "-route", "/search/{q}"}
	run := func(cmd string, args ...string) result {
		t.Helper()
		return cli(t, append(append([]string{cmd}, flags...), args...)...)
	}
	right := run("inspect", "-prefix", prefix)
	row(t, right.stdout, "per-hour", "3 per 1h", "0", "denied, retry in")
	if right.code != 0 || right.stderr != "" {
		t.Errorf("inspect with the application's -prefix: exit %d, stderr %q; want 0 and nothing", right.code, right.stderr)
	}
	for _, wrong := range [][]string{{}, {"-prefix", prefix + "x:"}, {"-prefix", prefix, "-compact"}, {"-prefix", prefix, "-hash"}} {
		r := run("inspect", wrong...)
		row(t, r.stdout, "per-hour", "3 per 1h", "3", "allowed")
		r.want(t, 0, "", "ratelimit inspect: 12:ip:192.0.2.1|17:route:/search/{q} "+nothing+", so every policy shows whole; "+check)
	}
	// reset's warning, for the same keys, says the same.
	run("reset", "-prefix", prefix+"x:").want(t, 0, "", "ratelimit reset: 12:ip:192.0.2.1|17:route:/search/{q} "+nothing+", so nothing was reset; "+check)
	if code := send(h, 1, search); code != http.StatusTooManyRequests {
		t.Errorf("search: status %d after a reset under another prefix; want 429", code)
	}
}
