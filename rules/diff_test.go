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

// TestDiffUnnamedPolicies: a policy without a name is named by New from its algorithm, limit
// and window, and its counts are stored under that name. Diff compared policies by the name
// written, "" for all of them: a rule of two unnamed policies that did not change was reported
// changed ("policies[].limit: 20 → 100; policies[].window: 1s → 1m0s", the second policy held
// against the first), and a limit raised from 10 to 20 read as one policy changed, where the
// policy gcra-10-per-1s, and its counts, are gone and gcra-20-per-1s starts from nothing
// (found by a review).
func TestDiffUnnamedPolicies(t *testing.T) {
	from := mustParseString(t, "rules:\n  - {name: a, key: ip, policies: [{limit: 10, window: 1s}, {limit: 100, window: 1m}]}\n"+
		"  - {name: b, match: {pattern: /b}, key: ip, policies: [{limit: 5, window: 1s}, {limit: 50, window: 1m, algorithm: fixed_window}]}\n")
	to := mustParseString(t, "rules:\n  - {name: a, key: ip, policies: [{limit: 20, window: 1s}, {limit: 100, window: 1m}]}\n"+
		"  - {name: b, match: {pattern: /b}, key: ip, policies: [{limit: 5, window: 1s}, {limit: 50, window: 1m, algorithm: fixed_window}]}\n")
	var got []string
	for _, c := range Diff(from, to) {
		got = append(got, c.String())
	}
	want := []string{
		`~ a: policy added: gcra-20-per-1s 20/1s gcra, replacing gcra-10-per-1s: counts restart (an unnamed policy is named from its limit; name it to keep its counts); policy removed: gcra-10-per-1s 10/1s gcra`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := Diff(to, to); len(d) != 0 {
		t.Errorf("Diff of a version with itself: %v, want no change", d)
	}
	added := Diff(nil, from)
	if len(added) != 2 || added[0].String() != `+ a: every request, key ip, gcra-10-per-1s 10/1s gcra, gcra-100-per-1m 100/1m0s gcra` {
		t.Errorf("Diff from nothing: %v", added)
	}
}

// TestDiffKeyWrittenAnotherWay: api_key is header:X-API-Key, and a header's name is read in
// any case; the identities, and so the counts, are the same. Diff showed "key: api_key →
// header:x-api-key", a change that changes nothing (found by a review); now a key is
// compared by the parts it reads, and a key that reads another part is still shown.
func TestDiffKeyWrittenAnotherWay(t *testing.T) {
	from := mustParseString(t, "rules:\n  - {name: a, key: [api_key, 'header:X-Tenant'], policies: [{name: m, limit: 10, window: 1m}]}\n")
	to := mustParseString(t, "rules:\n  - {name: a, key: ['header:x-api-key', 'header:x-tenant'], policies: [{name: m, limit: 10, window: 1m}]}\n")
	if d := Diff(from, to); len(d) != 0 {
		t.Errorf("Diff of a key written another way: %v, want no change", d)
	}
	other := mustParseString(t, "rules:\n  - {name: a, key: ['header:x-tenant', api_key], policies: [{name: m, limit: 10, window: 1m}]}\n")
	if d := Diff(from, other); len(d) != 1 || d[0].String() != "~ a: key: api_key+header:X-Tenant → header:x-tenant+api_key" {
		t.Errorf("Diff of the parts in another order (another identity): %v", d)
	}
}

// A rule added or removed is shown with its cost and fail mode when they are not the
// defaults: push -dry-run of README's rules file showed search-free without "cost 5" and
// "fail closed", which the push enables as much as its policy (found by a review).
func TestDiffAddedRuleShowsCostAndFailMode(t *testing.T) {
	to := mustParseString(t, "rules:\n  - {name: s, match: {pattern: 'GET /search/{q}'}, key: ip, cost: 5, fail: closed, policies: [{name: m, limit: 50, window: 1m}]}\n  - {name: d, key: ip, policies: [{name: n, limit: 10, window: 1m}]}\n")
	got := Diff(nil, to)
	want := []string{
		`+ s: "GET /search/{q}", key ip, cost 5, fail closed, m 50/1m0s gcra`,
		`+ d: every request, key ip, n 10/1m0s gcra`,
	}
	if len(got) != 2 || got[0].String() != want[0] || got[1].String() != want[1] {
		t.Errorf("Diff from nothing:\n%v\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if removed := Diff(to, mustParseString(t, "rules:\n  - {name: d, key: ip, policies: [{name: n, limit: 10, window: 1m}]}\n")); len(removed) != 1 || removed[0].String() != "- s: "+want[0][len("+ s: "):] {
		t.Errorf("a rule removed: %v", removed)
	}
}

// TestDiffCountsRestart: the state of a policy is kept under its name, its algorithm and its
// window (ratelimit.StorageKey), so a policy whose window or algorithm changes starts from
// nothing, and so does an unnamed policy whose limit changes (New names it from its limit).
// Diff showed "policies[m].window: 1m0s → 1h0m0s" as if it were a limit, a change that keeps
// the counts (found by a review): the line says the counts restart.
func TestDiffCountsRestart(t *testing.T) {
	from := mustParseString(t, "rules:\n  - {name: a, key: ip, policies: [{name: m, limit: 10, window: 1m}, {name: h, limit: 100, window: 1h}, {name: d, limit: 1000, window: 24h}]}\n"+
		"  - {name: b, match: {pattern: /b}, key: api_key, policies: [{limit: 10, window: 1s}]}\n")
	to := mustParseString(t, "rules:\n  - {name: a, key: ip, policies: [{name: m, limit: 10, window: 1h}, {name: h, limit: 100, window: 1h, algorithm: fixed_window}, {name: d, limit: 2000, window: 24h}]}\n"+
		"  - {name: b, match: {pattern: /b}, key: api_key, policies: [{limit: 20, window: 1s}]}\n")
	var got []string
	for _, c := range Diff(from, to) {
		got = append(got, c.String())
	}
	want := []string{
		`~ a: policies[m].window: 1m0s → 1h0m0s; policies[m]: counts restart (a policy's state is kept under its name, algorithm and window or period); ` +
			`policies[h].algorithm: gcra → fixed_window; policies[h]: counts restart (a policy's state is kept under its name, algorithm and window or period); ` +
			`policies[d].limit: 1000 → 2000`,
		`~ b: policy added: gcra-20-per-1s 20/1s gcra, replacing gcra-10-per-1s: counts restart (an unnamed policy is named from its limit; name it to keep its counts); ` +
			`policy removed: gcra-10-per-1s 10/1s gcra`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
