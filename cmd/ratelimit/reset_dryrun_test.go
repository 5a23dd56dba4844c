package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/redistest"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// TestResetThatDeletedNothingSaysSo: the application's store has a prefix; the operator runs
// reset without -prefix (or without -compact, or with an identity the key function never
// made). Nothing is deleted and the client stays refused: the command says so on standard
// error, naming what to check (it printed its table of deleted keys as if it had; found by a
// review).
func TestResetThatDeletedNothingSaysSo(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key, prefix := redistest.Addr(t), redistest.Prefix(t)+"rules", redistest.Prefix(t)
	file := write(t, "limits.yaml", stateYAML)[0]
	cli(t, "push", "-wait", "0", "-redis", addr, "-key", key, file).want(t, 0, "version s1", "")
	h := app(t, client, prefix)
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
