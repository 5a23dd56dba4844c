package ratelimit_test

import (
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/calendar"
)

// A check on the memory store allocates nothing: on an identity it holds, on one whose state
// has expired (its entry is reused), and with three policies. Allocation counts do not depend
// on the machine, so this holds where the speed of performance target 6 cannot be asserted.
// (Under the race detector sync.Pool drops a quarter of what it is given, which AllocsPerRun,
// counting whole allocations per run, rounds to 0.)
func TestMemoryStoreChecksAllocateNothing(t *testing.T) {
	clock := newFakeClock()
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock))
	for _, c := range []struct {
		name     string
		policies []ratelimit.Policy
		advance  time.Duration // between checks: past the state's expiry, or not
	}{
		{"gcra-1-policy", []ratelimit.Policy{{Limit: 1_000_000_000, Window: time.Second}}, 0},
		{"gcra-1-policy-expired", []ratelimit.Policy{{Name: "expiring", Limit: 1_000_000_000, Window: time.Second}}, time.Millisecond},
		{"3-policies", threePolicies(algorithms.GCRA{}), 0},
		{"sliding-counter", []ratelimit.Policy{{Limit: 1_000_000_000, Window: time.Second, Algorithm: algorithms.SlidingCounter{}}}, 0},
		// A calendar policy beside a window: its period is resolved once, until it ends.
		{"calendar-day-and-window", []ratelimit.Policy{{Limit: 1_000_000_000, Window: time.Second},
			{Name: "daily", Limit: 1_000_000_000, Period: &calendar.Period{Unit: calendar.Day, Zone: time.UTC}}}, time.Microsecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := mustNew(t, store, c.policies...)
			allow(t, l, "bench", 1)
			n := testing.AllocsPerRun(1000, func() {
				clock.Advance(c.advance)
				if _, err := l.AllowN(ctx, "bench", 0); err != nil {
					t.Fatal(err)
				}
				if _, err := l.Allow(ctx, "bench"); err != nil {
					t.Fatal(err)
				}
			})
			if n != 0 {
				t.Errorf("a check allocates %v times, want 0", n)
			}
		})
	}
}
