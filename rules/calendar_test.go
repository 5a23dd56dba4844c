package rules

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/calendar"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// TestCalendarRules reads testdata/calendar.yaml: a calendar rate and the long form, limit and
// period, become policies with a Period whose algorithm is fixed_window (the one that counts
// calendar periods), and the window policy beside them keeps gcra.
func TestCalendarRules(t *testing.T) {
	ps := mustParse(t, "calendar.yaml").Rules()
	daily, billing, second, weekly := ps[0].Policies[0], ps[0].Policies[1], ps[0].Policies[2], ps[1].Policies[0]
	ny, _ := time.LoadLocation("America/New_York")
	if daily.Limit != 3 || daily.Window != 0 || daily.Period == nil || daily.Period.Unit != calendar.Day || daily.Period.Zone.String() != ny.String() {
		t.Errorf("daily: %+v; want 3 per calendar day in America/New_York, no window", daily)
	}
	if daily.Algorithm.Name() != "fixed_window" || weekly.Algorithm.Name() != "fixed_window" {
		t.Errorf("the algorithms of the calendar policies: %s, %s; want fixed_window", daily.Algorithm.Name(), weekly.Algorithm.Name())
	}
	if billing.Limit != 10000 || billing.Period == nil || billing.Period.String() != "month@UTC~2026-01-31" {
		t.Errorf("billing: %+v; want 10000 per billing month anchored on 2026-01-31", billing)
	}
	if weekly.Period == nil || weekly.Period.String() != "week(monday)@Europe/Berlin" {
		t.Errorf("weekly: period %v", weekly.Period)
	}
	if second.Period != nil || second.Window != time.Second || second.Algorithm.Name() != "gcra" {
		t.Errorf("per-second: %+v; want 10/s, gcra, no period", second)
	}
	// Rules returns copies: changing a period leaves the set's.
	ps[0].Policies[0].Period.Unit = calendar.Year
	if got := mustParse(t, "calendar.yaml").Rules()[0].Policies[0].Period.Unit; got != calendar.Day {
		t.Errorf("the set's period after its copy changed: %v", got)
	}
}

// TestCalendarRuleLimitsByTheCalendarDay runs the daily quota of testdata/calendar.yaml in an
// engine: 3 requests at 23:59:59 in New York, the fourth refused; at midnight, the day after,
// allowed again, however few seconds have passed.
func TestCalendarRuleLimitsByTheCalendarDay(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	clock := fakeclock.New(time.Date(2026, 3, 7, 23, 59, 59, 0, ny))
	e, err := NewEngine(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), mustParse(t, "calendar.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.FromGuard(e.Guard())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	if ok, st := admitted(t, h, "/items", "key-1", "192.0.2.1:1", 4); ok != 3 || st[http.StatusTooManyRequests] != 1 {
		t.Fatalf("4 requests at 23:59:59: %d admitted (%v); want 3, then 429", ok, st)
	}
	clock.Set(time.Date(2026, 3, 8, 0, 0, 0, 0, ny))
	if ok, st := admitted(t, h, "/items", "key-1", "192.0.2.1:1", 4); ok != 3 {
		t.Fatalf("4 requests at midnight: %d admitted (%v); want 3, a new day", ok, st)
	}
}

// TestCalendarRuleErrors: what is wrong with a calendar policy is named at its field, with the
// file's line: the part of the period (calendar.Error's field), a period beside a window or a
// rate, an algorithm that cannot count periods, a burst, an anchor in the future.
func TestCalendarRuleErrors(t *testing.T) {
	for _, tc := range []struct{ policy, want string }{
		{"{rate: 1000/day@Mars/Olympus}", `limits.yaml:5: rules[0].policies[0].rate: rate "1000/day@Mars/Olympus": period "day@Mars/Olympus": zone "Mars/Olympus": unknown time zone`},
		{"{rate: 1000/day, algorithm: gcra}", ""}, // a window of 24 hours: any algorithm
		{"{rate: 1000/day@UTC, algorithm: gcra}", "limits.yaml:5: rules[0].policies[0].algorithm: gcra cannot count calendar periods; the period day@UTC is counted by fixed_window"},
		{"{limit: 5, period: month@UTC, algorithm: sliding_window_counter}", "limits.yaml:5: rules[0].policies[0].algorithm: sliding_window_counter cannot count calendar periods"},
		{"{limit: 5, period: week@UTC}", `limits.yaml:5: rules[0].policies[0].period: week start "": missing: write the week's first day`},
		{"{limit: 5, period: fortnight@UTC}", `limits.yaml:5: rules[0].policies[0].period: unit "fortnight": not a calendar unit`},
		{"{limit: 5, period: day}", `limits.yaml:5: rules[0].policies[0].period: zone "": missing: write the zone after @`},
		{"{limit: 5, period: 30}", "limits.yaml:5: rules[0].policies[0].period: want a calendar period such as day@UTC"},
		{"{limit: 5, period: day@UTC, window: 1d}", "limits.yaml:5: rules[0].policies[0].period: give window or period, not both"},
		{"{rate: 5/day@UTC, period: day@UTC}", "limits.yaml:5: rules[0].policies[0].rate: give rate, or limit and period, not both"},
		{"{period: day@UTC}", "limits.yaml:5: rules[0].policies[0].limit: required (or rate)"},
		{"{limit: 5}", "limits.yaml:5: rules[0].policies[0].window: required (or period, or rate)"},
		{"{rate: 5/day@UTC, burst: 10}", `limits.yaml:5: rules[0].policies[0].burst: ratelimit: invalid policy "calendar-5-per-day": Burst is 10`},
		{"{limit: 5, period: month@UTC~2999-01-31}", `limits.yaml:5: rules[0].policies[0].period: ratelimit: invalid policy "calendar-5-per-month-cycle": Period: anchor "2999-01-31T00:00:00Z": in the future`},
		{"{rate: 5/month@UTC~2999-01-31}", `limits.yaml:5: rules[0].policies[0].rate: ratelimit: invalid policy "calendar-5-per-month-cycle": Period: anchor`},
	} {
		doc := "rules:\n  - name: api\n    key: ip\n    policies:\n      - " + tc.policy + "\n"
		_, err := Parse("limits.yaml", []byte(doc))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v; want no error", tc.policy, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s:\n got %v\nwant %s...", tc.policy, err, tc.want)
		}
	}
}

// TestCalendarDiff: a rules diff shows a period that changes, and that the counts restart (a
// calendar policy's state is kept under its period); a limit that changes keeps them; a
// window that becomes a period is shown as one change of the period.
func TestCalendarDiff(t *testing.T) {
	doc := func(daily, hourly string) *Set {
		return mustParseString(t, "rules:\n  - {name: a, key: ip, policies: [{name: d, "+daily+"}, {name: h, "+hourly+"}]}\n")
	}
	from := doc("rate: 1000/day@America/New_York", "rate: 100/h")
	var got []string
	for _, c := range Diff(from, doc("rate: 2000/day@America/New_York", "rate: 100/h")) {
		got = append(got, c.String())
	}
	if want := "~ a: policies[d].limit: 1000 → 2000"; strings.Join(got, "\n") != want {
		t.Errorf("a calendar limit changed: %v; want %s", got, want)
	}
	got = nil
	for _, c := range Diff(from, doc("limit: 1000, period: day@Europe/Berlin", "rate: 100/month@UTC")) {
		got = append(got, c.String())
	}
	want := "~ a: policies[d].period: day@America/New_York → day@Europe/Berlin; policies[d]: counts restart (a policy's state is kept under its name, algorithm and window or period); " +
		"policies[h].period: 1h0m0s → month@UTC; policies[h].algorithm: gcra → fixed_window; policies[h]: counts restart (a policy's state is kept under its name, algorithm and window or period)"
	if strings.Join(got, "\n") != want {
		t.Errorf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
	if added := Diff(nil, from); len(added) != 1 || added[0].String() != "+ a: every request, key ip, d 1000/day@America/New_York fixed_window, h 100/1h0m0s gcra" {
		t.Errorf("a rule added: %v", added)
	}
	if from.Version() == doc("rate: 1000/day@Europe/Berlin", "rate: 100/h").Version() {
		t.Error("a period that changes leaves the version of the rules the same")
	}
}

// TestCalendarAlgorithmIsTheCores: the rules' algorithm of a calendar policy is the one
// ratelimit.Policy gives a Period when Algorithm is nil, so that both keep the state under
// one key.
func TestCalendarAlgorithmIsTheCores(t *testing.T) {
	p, err := ratelimit.ParsePolicy("5/day@UTC")
	if err != nil {
		t.Fatal(err)
	}
	q := p
	q.Algorithm = calendarAlgorithm
	if a, b := ratelimit.StorageKey("", "id", p, false), ratelimit.StorageKey("", "id", q, false); a != b || calendarAlgorithm != (algorithms.FixedWindow{}) {
		t.Errorf("keys %s (Algorithm nil), %s (the rules'); want one", a, b)
	}
}

// TestCalendarDocRules parses docs/rules.md's calendar quotas as written: each policy has the
// period the guide says, and the window policy beside them none.
func TestCalendarDocRules(t *testing.T) {
	doc := readmetest.Block(t, "../docs/rules.md", "## Calendar quotas", "yaml")
	set, err := Parse("limits.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range set.Rules()[0].Policies {
		got = append(got, fmt.Sprintf("%s %d/%s %s", p.Name, p.Limit, span(&p), p.Algorithm.Name()))
	}
	want := "daily 1000/day@America/New_York fixed_window, billing 50000/month@UTC~2026-01-31 fixed_window, " +
		"weekly 5000/week(monday)@Europe/Berlin fixed_window, per-second 10/1s gcra"
	if strings.Join(got, ", ") != want {
		t.Errorf("the guide's policies: %s\nwant %s", strings.Join(got, ", "), want)
	}
	// The errors the guide quotes, of its file with one policy changed.
	for from, want := range map[string]string{
		"rate: 1000/day@America/New_York}":       "limits.yaml:6: rules[0].policies[0].algorithm: gcra cannot count calendar periods; ",
		"rate: 1000/day@Mars/Olympus}":           `limits.yaml:6: rules[0].policies[0].rate: rate "1000/day@Mars/Olympus": period "day@Mars/Olympus": zone "Mars/Olympus": unknown time zone: `,
		"limit: 1000, period: day@Mars/Olympus}": `limits.yaml:6: rules[0].policies[0].period: zone "Mars/Olympus": unknown time zone: `,
	} {
		changed := strings.Replace(doc, "rate: 1000/day@America/New_York}", from, 1)
		if strings.HasSuffix(want, "calendar periods; ") {
			changed = strings.Replace(doc, "rate: 1000/day@America/New_York}", "rate: 1000/day@America/New_York, algorithm: gcra}", 1)
		}
		if _, err := Parse("limits.yaml", []byte(changed)); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("the guide's file with %s: %v; want %s...", from, err, want)
		}
	}
}

// TestCalendarOverride: an override may give a client a calendar quota of its own; the
// client's limits are that quota, and a diff of it shows the period.
func TestCalendarOverride(t *testing.T) {
	doc := func(rate string) *Set {
		return mustParseString(t, "version: \"1\"\nrules:\n  - {name: api, key: api_key, policies: [{name: daily, rate: 100/day@UTC}]}\n"+
			"overrides:\n  - client: {api_key: acme}\n    policies: [{name: daily, rate: "+rate+"}]\n")
	}
	from := doc("1000/day@UTC")
	r := from.Rules()[0]
	limits := from.ClientLimits(&r, "hdr:x-api-key:acme")
	if len(limits.Policies) != 1 || limits.Policies[0].Limit != 1000 || limits.Policies[0].Period == nil || limits.Policies[0].Period.String() != "day@UTC" {
		t.Fatalf("acme's limits: %+v; want 1000 per day@UTC", limits)
	}
	var got []string
	for _, c := range Diff(from, doc("1000/month@UTC")) {
		got = append(got, c.String())
	}
	if want := "~ (overrides): ~ api_key=acme on every rule keyed by api_key: daily 1000/day@UTC fixed_window → daily 1000/month@UTC fixed_window"; strings.Join(got, "\n") != want {
		t.Errorf("Diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
}
