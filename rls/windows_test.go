package rls

import (
	"strings"
	"testing"
	"time"
)

func TestParseConfigWindowErrors(t *testing.T) {
	for _, tc := range []struct {
		name, rateLimit string
		want            string
	}{
		{"unknown algorithm", `{unit: second, requests_per_unit: 5, algorithm: bucket}`,
			`f1.yaml:4: unknown algorithm "bucket" (one of fixed_window, sliding_window_log, sliding_window_counter, token_bucket, leaky_bucket, gcra)`},
		{"in-flight", `{unit: second, requests_per_unit: 5, algorithm: in_flight}`, "f1.yaml:4: algorithm in_flight cannot be used here"},
		{"shaping", `{unit: second, requests_per_unit: 5, algorithm: leaky_bucket_shaping}`, "f1.yaml:4: algorithm leaky_bucket_shaping cannot be used here"},
		{"empty algorithm", `{unit: second, requests_per_unit: 5, algorithm: ""}`, "f1.yaml:4: algorithm must not be empty"},
		{"burst without algorithm", `{unit: second, requests_per_unit: 5, burst: 3}`, "f1.yaml:4: burst is given, but the default fixed window has none"},
		{"burst of a window algorithm", `{unit: second, requests_per_unit: 5, algorithm: sliding_window_log, burst: 3}`, "f1.yaml:4: burst is given, but sliding_window_log has none"},
		{"burst of 0", `{unit: second, requests_per_unit: 5, algorithm: gcra, burst: 0}`, "f1.yaml:4: burst must be a whole number from 1"},
		{"unlimited with an algorithm", `{unlimited: true, algorithm: gcra}`, "f1.yaml:4: unlimited has no window"},
		{"no requests with also", `{unit: second, requests_per_unit: 0, also: [{unit: hour, requests_per_unit: 5}]}`, "f1.yaml:4: requests_per_unit 0 refuses every request"},
		{"also not a list", `{unit: second, requests_per_unit: 5, also: {unit: hour}}`, "f1.yaml:4: also must be a list of windows"},
		{"also without requests", `{unit: second, requests_per_unit: 5, also: [{unit: hour}]}`, "f1.yaml:4: requests_per_unit of a window of also must be a whole number from 1 to 4294967295, not missing"},
		{"also of an unknown unit", `{unit: second, requests_per_unit: 5, also: [{unit: fortnight, requests_per_unit: 5}]}`, "f1.yaml:4: invalid rate limit unit 'fortnight'"},
		{"also with a field of its own", `{unit: second, requests_per_unit: 5, also: [{unit: hour, requests_per_unit: 5, name: x}]}`, `f1.yaml:4: unknown field "name" in a window of also`},
		{"beyond the exact arithmetic", `{unit: year, requests_per_unit: 7, algorithm: gcra, burst: 4000000000}`, "f1.yaml:4: the windows are refused: ratelimit: invalid policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: "+tc.rateLimit+"\n")
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one error starting %q", err, tc.want)
			}
		})
	}
	_, err := parse(t, "domain: d\ndescriptors:\n  - key: k\n    algorithm: gcra\n")
	if want := `f1.yaml:4: unknown field "algorithm" in a descriptor (it belongs in rate_limit)`; err == nil || err.Error() != want {
		t.Errorf("algorithm in a descriptor: %v, want %q", err, want)
	}
}

func TestDumpWindows(t *testing.T) {
	cfg, err := parse(t, `domain: d
descriptors:
  - key: a
    rate_limit: {unit: second, requests_per_unit: 5, algorithm: gcra, burst: 10, also: [{unit: hour, requests_per_unit: 100}]}
  - key: b
    rate_limit: {unit: minute, requests_per_unit: 5}
`)
	if err != nil {
		t.Fatal(err)
	}
	want := "d.a: unit=SECOND requests_per_unit=5 algorithm=gcra burst=10 also unit=HOUR requests_per_unit=100, shadow_mode: false, quota_mode: false\n" +
		"d.b: unit=MINUTE requests_per_unit=5, shadow_mode: false, quota_mode: false\n"
	if got := cfg.Dump(); got != want {
		t.Errorf("Dump:\n%s\nwant:\n%s", got, want)
	}
}

const windowsConfig = `domain: w
descriptors:
  - key: gcra
    rate_limit: {unit: second, requests_per_unit: 1, algorithm: gcra, burst: 3}
  - key: bucket
    rate_limit: {unit: minute, requests_per_unit: 6, algorithm: token_bucket, burst: 2}
  - key: log
    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: sliding_window_log}
  - key: two
    rate_limit:
      unit: second
      requests_per_unit: 2
      name: pair
      also: [{unit: minute, requests_per_unit: 3}]
`

// TestAlgorithms runs a rule of each kind on every store: each admits as its algorithm says,
// where the default fixed window would admit otherwise.
func TestAlgorithms(t *testing.T) {
	type step struct {
		advance time.Duration
		key     string
		want    string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"gcra: a burst of 3, then 1 a second", []step{
			// the reset is the effective window: the time after which one more is admitted
			{0, "gcra", "OK: OK 2/1/SECOND 1s"}, {0, "gcra", "OK: OK 1/1/SECOND 1s"}, {0, "gcra", "OK: OK 0/1/SECOND 1s"},
			{0, "gcra", "OVER_LIMIT: OVER_LIMIT 0/1/SECOND 1s"}, // a fixed window of 1 a second admits 1, not 3
			{time.Second, "gcra", "OK: OK 0/1/SECOND 1s"},
			{0, "gcra", "OVER_LIMIT: OVER_LIMIT 0/1/SECOND 1s"},
		}},
		{"token bucket: 2 at once, then one every 10 s", []step{
			{0, "bucket", "OK: OK 1/6/MINUTE 10s"}, {0, "bucket", "OK: OK 0/6/MINUTE 10s"}, {0, "bucket", "OVER_LIMIT: OVER_LIMIT 0/6/MINUTE 10s"},
			{10 * time.Second, "bucket", "OK: OK 0/6/MINUTE 10s"}, {0, "bucket", "OVER_LIMIT: OVER_LIMIT 0/6/MINUTE 10s"},
		}},
		{"sliding log: 2 in any minute", []step{
			{30 * time.Second, "log", "OK: OK 1/2/MINUTE 1m0s"}, {time.Second, "log", "OK: OK 0/2/MINUTE 59s"},
			{30 * time.Second, "log", "OVER_LIMIT: OVER_LIMIT 0/2/MINUTE 29s"}, // a new fixed window, not a new minute
			{29 * time.Second, "log", "OK: OK 0/2/MINUTE 1s"},
		}},
	} {
		for _, st := range stores {
			t.Run(tc.name+"/"+st.name, func(t *testing.T) {
				f := newFixtureOn(t, st.make, windowsConfig)
				for i, s := range tc.steps {
					f.clock.Advance(s.advance)
					if got := summary(f.call(request("w", desc(s.key, "v")))); got != s.want {
						t.Errorf("step %d: %s, want %s", i, got, s.want)
					}
				}
			})
		}
	}
}

// TestSeveralWindows checks a rule of two windows: all or nothing, each status the window
// closest to its limit.
func TestSeveralWindows(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			f := newFixtureOn(t, st.make, windowsConfig)
			for i, s := range []struct {
				advance time.Duration
				want    string
			}{
				{0, "OK: OK 1/2/SECOND 1s"},                  // second: 1 left, minute: 2
				{0, "OK: OK 0/2/SECOND 1s"},                  // second: 0, minute: 1
				{0, "OVER_LIMIT: OVER_LIMIT 0/2/SECOND 1s"},  // the second refuses; the minute is not charged
				{time.Second, "OK: OK 0/3/MINUTE 59s"},       // the minute's last: it was not charged above
				{0, "OVER_LIMIT: OVER_LIMIT 0/3/MINUTE 59s"}, // the minute refuses, the second would admit
				{59 * time.Second, "OK: OK 1/2/SECOND 1s"},
			} {
				f.clock.Advance(s.advance)
				resp := f.call(request("w", desc("two", "v")))
				if got := summary(resp); got != s.want {
					t.Errorf("call %d: %s, want %s", i, got, s.want)
				}
				if name := resp.Statuses[0].CurrentLimit.GetName(); name != "pair" {
					t.Errorf("call %d: current_limit named %q, want the rule's name", i, name)
				}
			}
		})
	}
}

// TestSetConfigKeepsWindowCounts: a reload that adds a window keeps the first one's count; one
// that changes its algorithm starts afresh.
func TestSetConfigKeepsWindowCounts(t *testing.T) {
	const plain = "domain: k\ndescriptors:\n  - key: a\n    rate_limit: {unit: minute, requests_per_unit: 3}\n"
	f := newFixture(t, plain)
	f.call(request("k", desc("a", "1")))
	f.call(request("k", desc("a", "1")))
	for _, tc := range []struct{ rateLimit, want string }{
		{"{unit: minute, requests_per_unit: 3, also: [{unit: hour, requests_per_unit: 10}]}", "OK: OK 0/3/MINUTE 1m0s"},
		{"{unit: minute, requests_per_unit: 3, algorithm: sliding_window_log}", "OK: OK 2/3/MINUTE 1m0s"},
	} {
		cfg, err := ParseConfig(File{Name: "k.yaml", Data: []byte("domain: k\ndescriptors:\n  - key: a\n    rate_limit: " + tc.rateLimit + "\n")})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.srv.SetConfig(cfg); err != nil {
			t.Fatal(err)
		}
		if got := summary(f.call(request("k", desc("a", "1")))); got != tc.want {
			t.Errorf("after a reload to %s: %s, want %s", tc.rateLimit, got, tc.want)
		}
	}
}
