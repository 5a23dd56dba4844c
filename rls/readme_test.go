package rls

import (
	"fmt"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// TestReadmeWindows parses README's example of algorithms and windows as written, and checks
// what it says: bursts of 20 a second for each client, 1000 an hour, and 100 in any minute for
// each user.
func TestReadmeWindows(t *testing.T) {
	yaml := readmetest.Block(t, "README.md", "**Algorithms and several windows", "yaml")
	f := newFixture(t, yaml)
	for i := range 20 {
		want := fmt.Sprintf("OK: OK %d/10/SECOND 1s", 19-i)
		if got := summary(f.call(request("edge", desc("remote_address", "10.0.0.1")))); got != want {
			t.Fatalf("call %d of a burst: %s, want %s", i, got, want)
		}
	}
	if got, want := summary(f.call(request("edge", desc("remote_address", "10.0.0.1")))), "OVER_LIMIT: OVER_LIMIT 0/10/SECOND 1s"; got != want {
		t.Errorf("the 21st call at once: %s, want %s", got, want)
	}
	// At the rate, 10 a second, the hour's 1000 run out (20 of them spent above).
	for i := range 980 {
		f.clock.Advance(100 * time.Millisecond)
		if resp := f.call(request("edge", desc("remote_address", "10.0.0.1"))); resp.OverallCode != ok {
			t.Fatalf("call %d at the rate: %s", i, summary(resp))
		}
	}
	f.clock.Advance(100 * time.Millisecond)
	if got, want := summary(f.call(request("edge", desc("remote_address", "10.0.0.1")))), "OVER_LIMIT: OVER_LIMIT 0/1000/HOUR 58m22s"; got != want {
		t.Errorf("the 1001st call in the hour: %s, want %s", got, want)
	}
	if got, want := f.srv.Config().Dump(), "edge.remote_address: unit=SECOND requests_per_unit=10 algorithm=gcra burst=20 also unit=HOUR requests_per_unit=1000, shadow_mode: false, quota_mode: false\n"+
		"edge.user: unit=MINUTE requests_per_unit=100 algorithm=sliding_window_log, shadow_mode: false, quota_mode: false\n"; got != want {
		t.Errorf("Dump:\n%s\nwant:\n%s", got, want)
	}
}

// TestReadmeCalendar parses README's example of calendar quotas as written, and checks what
// it says: a customer's month in Berlin from midnight of the 1st, 50 a second beside it, and
// an API key's day in New York.
func TestReadmeCalendar(t *testing.T) {
	yaml := readmetest.Block(t, "README.md", "**Calendar quotas", "yaml")
	f := newFixtureAt(t, memoryStore, time.Date(2026, 2, 28, 23, 0, 0, 0, time.UTC), yaml) // March 1st, 00:00 in Berlin
	for i := range 50 {
		if resp := f.call(request("api", desc("customer", "c1"))); resp.OverallCode != ok {
			t.Fatalf("call %d in the first second: %s", i, summary(resp))
		}
	}
	if got, want := summary(f.call(request("api", desc("customer", "c1")))), "OVER_LIMIT: OVER_LIMIT 0/50/SECOND 1s"; got != want {
		t.Errorf("the 51st in a second: %s, want %s", got, want)
	}
	f.clock.Advance(time.Second)
	// 9950 of the month left: March in Berlin is 31 days less the hour of the 29th.
	if got, want := summary(f.call(request("api", desc("customer", "c1")))), "OK: OK 49/50/SECOND 1s"; got != want {
		t.Errorf("the next second: %s, want %s", got, want)
	}
	// The day in New York: 18:00:01 EST on February 28th, 6 hours less a second to its end.
	if got, want := summary(f.call(request("api", desc("api_key", "k1")))), "OK: OK 999/1000/DAY 5h59m59s"; got != want {
		t.Errorf("an API key's first call: %s, want %s", got, want)
	}
	if got, want := f.srv.Config().Dump(), "api.api_key: unit=DAY requests_per_unit=1000 period=day@America/New_York also period=month@America/New_York~2026-01-31 requests_per_unit=20000, shadow_mode: false, quota_mode: false\n"+
		"api.customer: unit=MONTH requests_per_unit=10000 period=month@Europe/Berlin also unit=SECOND requests_per_unit=50, shadow_mode: false, quota_mode: false\n"; got != want {
		t.Errorf("Dump:\n%s\nwant:\n%s", got, want)
	}
}
