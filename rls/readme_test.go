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
