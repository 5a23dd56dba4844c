package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// Instances of another kind (ratelimit-rls, recorded with rules.RecordInstance as it records
// itself) are listed apart, with their own versions, load times and health; the exit status
// and push's wait are the engines' alone.
func TestStatusListsOtherKinds(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	for _, in := range []rules.Instance{
		{Name: "rls-a", Kind: "rls", Running: "sha256:1111111111111111", Loaded: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Health: "serving"},
		{Name: "rls-b", Kind: "rls", Running: "sha256:2222222222222222", Loaded: time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC), Health: "not_serving",
			Refused: "sha256:3333333333333333", Reason: "edge.yaml:4: invalid rate limit unit 'fortnight'"},
	} {
		if err := rules.RecordInstance(t.Context(), client, key, in, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	// No engine: none watches the rules (exit 3), and the rls instances are listed.
	s := cli(t, "status", "-redis", addr, "-key", key)
	s.want(t, 3, "2 instances of other kinds, on configurations of their own:", "no instance is watching")
	for _, re := range []string{
		`rls-a\s+rls\s+sha256:1111111111111111\s+2026-03-01T12:00:00Z\s+serving\s+-\s+\S+ ago`,
		`rls-b\s+rls\s+sha256:2222222222222222\s+2026-03-01T12:05:00Z\s+not_serving\s+sha256:3333333333333333\s+\S+ ago\s+edge.yaml:4: invalid rate limit unit 'fortnight'`,
	} {
		if !regexp.MustCompile(re).MatchString(s.stdout) {
			t.Errorf("status does not match %s:\n%s", re, s.stdout)
		}
	}
	// push does not wait for them: they do not run the stored rules.
	files := write(t, "v1.yaml", doc("1", "ip"))
	cli(t, "push", "-wait", "20s", "-redis", addr, "-key", key, files[0]).want(t, 3, "no instance is watching", "")
	// An engine on the stored version: every engine runs it, exit 0, the rls instances beside.
	watchingInstance(t, client, key, "api-1")
	s = cli(t, "status", "-redis", addr, "-key", key)
	s.want(t, 0, "1 of 1 instances run the stored version", "")
	s.want(t, 0, "2 instances of other kinds", "")
	if regexp.MustCompile(`(?m)^rls-a\s+sha256`).MatchString(s.stdout) {
		t.Errorf("an rls instance is in the engines' table:\n%s", s.stdout)
	}
}
