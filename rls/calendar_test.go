package rls

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

const calendarConfig = `domain: quota
descriptors:
  - key: customer
    rate_limit:
      period: month@Europe/Berlin
      requests_per_unit: 3
  - key: epoch
    rate_limit: {unit: month, requests_per_unit: 3}
  - key: both
    rate_limit:
      unit: second
      requests_per_unit: 2
      also: [{period: day@America/New_York, requests_per_unit: 3}]
`

// TestCalendarMonth: a month in Europe/Berlin is counted from local midnight of the 1st to the
// next, 28 days for February and 31 less an hour for March (the clock set forward on the
// 29th), and duration_until_reset is the time to its end; unit: month stays the reference's
// 30 days since the epoch, which does not reset then.
func TestCalendarMonth(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			f := newFixtureOn(t, st.make, calendarConfig)
			f.clock.Set(time.Date(2026, 1, 31, 22, 59, 57, 0, time.UTC)) // 23:59:57 in Berlin
			for i, want := range []string{"OK: OK 2/3/MONTH 3s", "OK: OK 1/3/MONTH 3s", "OK: OK 0/3/MONTH 3s", "OVER_LIMIT: OVER_LIMIT 0/3/MONTH 3s"} {
				if got := summary(f.call(request("quota", desc("customer", "c1")))); got != want {
					t.Errorf("January, call %d: %s, want %s", i, got, want)
				}
			}
			for range 3 {
				f.call(request("quota", desc("epoch", "c1")))
			}
			f.clock.Advance(3 * time.Second) // 2026-02-01 00:00:00 in Berlin
			if got, want := summary(f.call(request("quota", desc("customer", "c1")))), "OK: OK 2/3/MONTH 672h0m0s"; got != want {
				t.Errorf("at midnight of February 1st in Berlin: %s, want %s (a new month of 28 days)", got, want)
			}
			if got := summary(f.call(request("quota", desc("epoch", "c1")))); !strings.HasPrefix(got, "OVER_LIMIT: OVER_LIMIT 0/3/MONTH") {
				t.Errorf("unit: month at the same instant: %s, want still over (30 days since the epoch)", got)
			}
			f.clock.Set(time.Date(2026, 2, 28, 22, 59, 59, 0, time.UTC))
			if got, want := summary(f.call(request("quota", desc("customer", "c1")))), "OK: OK 1/3/MONTH 1s"; got != want {
				t.Errorf("the last second of February: %s, want %s", got, want)
			}
			f.clock.Advance(time.Second)
			if got, want := summary(f.call(request("quota", desc("customer", "c1")))), "OK: OK 2/3/MONTH 743h0m0s"; got != want {
				t.Errorf("March 1st in Berlin: %s, want %s (31 days less the hour of March 29th)", got, want)
			}
		})
	}
}

// TestCalendarInAlso: a calendar day in New York beside a second's window, all or nothing; the
// status reports the window closest to its limit, the day's reset its local midnight.
func TestCalendarInAlso(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			f := newFixtureOn(t, st.make, calendarConfig)
			f.clock.Set(time.Date(2026, 3, 8, 4, 0, 0, 0, time.UTC)) // 23:00 on March 7th in New York (EST)
			for i, s := range []struct {
				advance time.Duration
				want    string
			}{
				{0, "OK: OK 1/2/SECOND 1s"},
				{0, "OK: OK 0/2/SECOND 1s"},
				{0, "OVER_LIMIT: OVER_LIMIT 0/2/SECOND 1s"}, // the second refuses; the day is not charged
				{time.Second, "OK: OK 0/3/DAY 59m59s"},      // the day's third
				{time.Second, "OVER_LIMIT: OVER_LIMIT 0/3/DAY 59m58s"},
				{59*time.Minute + 58*time.Second, "OK: OK 1/2/SECOND 1s"}, // March 8th: a day of 23 hours
				{0, "OK: OK 0/2/SECOND 1s"},
				{time.Second, "OK: OK 0/3/DAY 22h59m59s"},
			} {
				f.clock.Advance(s.advance)
				if got := summary(f.call(request("quota", desc("both", "b")))); got != s.want {
					t.Errorf("call %d: %s, want %s", i, got, s.want)
				}
			}
		})
	}
}

// TestCalendarFailDeny: a calendar window the store cannot decide is refused by the deny mode
// until the end of its period.
func TestCalendarFailDeny(t *testing.T) {
	cfg, err := ParseConfig(File{Name: "q.yaml", Data: []byte(calendarConfig)})
	if err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New(time.Date(2026, 2, 28, 23, 0, 0, 0, time.UTC)) // March 1st in Berlin
	srv, err := NewServer(failingStore{errors.New("down")}, cfg, WithFailMode(FailDeny), WithClock(clk), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.ShouldRateLimit(t.Context(), request("quota", desc("customer", "c")))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary(resp), "OVER_LIMIT: OVER_LIMIT 0/3/MONTH 743h0m0s"; got != want {
		t.Errorf("%s, want %s", got, want)
	}
}

// TestCalendarIETFPolicy: a calendar window's RateLimit-Policy item has no w (its length is
// not fixed), as the library's guard writes it; RateLimit's t is the time to its end.
func TestCalendarIETFPolicy(t *testing.T) {
	f := newFixture(t, calendarConfig, WithIETFHeaders(11))
	f.clock.Set(time.Date(2026, 3, 8, 4, 0, 0, 0, time.UTC))
	resp := f.call(request("quota", desc("both", "b")))
	got := map[string]string{}
	for _, h := range resp.ResponseHeadersToAdd {
		got[h.Key] = h.Value
	}
	if want := `"quota.both";q=2;w=1, "quota.both-2";q=3`; got[IETFPolicyHeader] != want {
		t.Errorf("%s: %s, want %s", IETFPolicyHeader, got[IETFPolicyHeader], want)
	}
	f.call(request("quota", desc("both", "b")))
	f.clock.Advance(time.Second)
	resp = f.call(request("quota", desc("both", "b")))
	for _, h := range resp.ResponseHeadersToAdd {
		if h.Key == IETFHeader && h.Value != `"quota.both-2";r=0;t=3599` {
			t.Errorf("%s: %s, want the day's, to its end", IETFHeader, h.Value)
		}
	}
}

func TestCalendarDump(t *testing.T) {
	cfg, err := parse(t, calendarConfig)
	if err != nil {
		t.Fatal(err)
	}
	want := "quota.both: unit=SECOND requests_per_unit=2 also period=day@America/New_York requests_per_unit=3, shadow_mode: false, quota_mode: false\n" +
		"quota.customer: unit=MONTH requests_per_unit=3 period=month@Europe/Berlin, shadow_mode: false, quota_mode: false\n" +
		"quota.epoch: unit=MONTH requests_per_unit=3, shadow_mode: false, quota_mode: false\n"
	if got := cfg.Dump(); got != want {
		t.Errorf("Dump:\n%s\nwant:\n%s", got, want)
	}
}

func TestParseConfigCalendarErrors(t *testing.T) {
	for _, tc := range []struct {
		name, rateLimit string
		want            string
	}{
		{"with a unit", "{unit: month, period: month@UTC, requests_per_unit: 5}", "f1.yaml:4: unit and period do not go together"},
		{"unknown zone", "{period: month@Mars/Olympus, requests_per_unit: 5}", `f1.yaml:4: period "month@Mars/Olympus": zone "Mars/Olympus": unknown time zone`},
		{"no zone", "{period: month, requests_per_unit: 5}", `f1.yaml:4: period "month": zone "": missing`},
		{"not a calendar unit", "{period: fortnight@UTC, requests_per_unit: 5}", `f1.yaml:4: period "fortnight@UTC": unit "fortnight"`},
		{"the host's zone", "{period: day@Local, requests_per_unit: 5}", `f1.yaml:4: period "day@Local": zone "Local"`},
		{"another algorithm", "{period: day@UTC, requests_per_unit: 5, algorithm: gcra}", "f1.yaml:4: period is given with algorithm gcra: a calendar period is counted by fixed_window only"},
		{"an anchor to come", "{period: month@UTC~9999-01-31, requests_per_unit: 5}", `f1.yaml:4: period "month@UTC~9999-01-31": anchor "9999-01-31": in the future`},
		{"unlimited", "{unlimited: true, period: day@UTC}", "f1.yaml:4: unlimited has no window"},
		{"no requests", "{period: day@UTC, requests_per_unit: 0}", "f1.yaml:4: requests_per_unit 0 refuses every request"},
		{"not a string", "{period: [day], requests_per_unit: 5}", "f1.yaml:4: period must be a string"},
		{"also with a unit", "{unit: second, requests_per_unit: 5, also: [{unit: day, period: day@UTC, requests_per_unit: 9}]}", "f1.yaml:4: unit and period do not go together"},
		{"also of another algorithm", "{unit: second, requests_per_unit: 5, also: [{period: day@UTC, requests_per_unit: 9, algorithm: sliding_window_log}]}", "f1.yaml:4: period is given with algorithm sliding_window_log"},
		{"also of an unknown zone", "{unit: second, requests_per_unit: 5, also: [{period: day@Nowhere, requests_per_unit: 9}]}", `f1.yaml:4: period "day@Nowhere": zone "Nowhere"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: "+tc.rateLimit+"\n")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one error starting %q", err, tc.want)
			}
		})
	}
	// fixed_window by name is the calendar's algorithm, and accepted.
	if _, err := parse(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {period: 2weeks(monday)@UTC, requests_per_unit: 5, algorithm: fixed_window}\n"); err != nil {
		t.Errorf("a period with algorithm fixed_window: %v", err)
	}
}

// TestCalendarReloadKeepsCount: a reload that changes a period's limit keeps its count; one
// that changes its zone starts a new one.
func TestCalendarReloadKeepsCount(t *testing.T) {
	rule := func(period, n string) string {
		return "domain: q\ndescriptors:\n  - key: c\n    rate_limit: {period: " + period + ", requests_per_unit: " + n + "}\n"
	}
	f := newFixtureAt(t, memoryStore, time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC), rule("month@Europe/Berlin", "3"))
	f.call(request("q", desc("c", "1")))
	f.call(request("q", desc("c", "1")))
	for _, tc := range []struct{ period, n, want string }{
		{"month@Europe/Berlin", "5", "OK: OK 2/5/MONTH 514h0m0s"}, // 3 used of 5; to April 1st, 00:00 in Berlin (22:00 UTC)
		{"month@Asia/Tokyo", "5", "OK: OK 4/5/MONTH 507h0m0s"},    // a new count; to April 1st in Tokyo (15:00 UTC)
	} {
		cfg, err := ParseConfig(File{Name: "q.yaml", Data: []byte(rule(tc.period, tc.n))})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.srv.SetConfig(cfg); err != nil {
			t.Fatal(err)
		}
		if got := summary(f.call(request("q", desc("c", "1")))); got != tc.want {
			t.Errorf("after a reload to %s, %s: %s, want %s", tc.period, tc.n, got, tc.want)
		}
	}
}
