package rules

import (
	"strings"
	"testing"
)

// Diff says rule by rule what a new version adds, removes and changes.
func TestDiff(t *testing.T) {
	from := mustParseString(t, `version: "1"
rules:
  - name: free
    key: api_key
    policies: [{name: per-minute, limit: 100, window: 1m}]
  - name: old
    match: {pattern: "/old"}
    key: ip
    policies: [{name: m, limit: 5, window: 1m}]
  - name: same
    match: {pattern: "/same"}
    key: ip
    policies: [{name: m, limit: 5, window: 1m}]
`)
	to := mustParseString(t, `version: "2"
rules:
  - name: free
    key: [api_key, ip]
    fail: closed
    policies: [{name: per-minute, limit: 200, window: 1m}, {name: daily, limit: 1000, window: 24h}]
  - name: same
    match: {pattern: "/same"}
    key: ip
    policies: [{name: m, limit: 5, window: 1m}]
  - name: search
    match: {pattern: "GET /search/{q}"}
    key: [api_key, route]
    policies: [{name: s, limit: 50, window: 1m, algorithm: sliding_window_counter}]
`)
	var got []string
	for _, c := range Diff(from, to) {
		got = append(got, c.String())
	}
	want := []string{
		`~ free: key: api_key → api_key+ip; fail: open → closed; policies[per-minute].limit: 100 → 200; policy added: daily 1000/24h0m0s gcra`,
		`+ search: "GET /search/{q}", key api_key+route, s 50/1m0s sliding_window_counter`,
		`- old: "/old", key ip, m 5/1m0s gcra`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(Diff(to, to)); n != 0 {
		t.Errorf("Diff of a version with itself: %d changes, want none", n)
	}
	if n := len(Diff(nil, to)); n != 3 {
		t.Errorf("Diff from nothing: %d changes, want 3 added", n)
	}
}
