package ratelimit

import (
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/calendar"
)

// TestHoldsLongLived: the store reads its servers' persistence for a calendar policy or a
// window of at least an hour, and for no shorter one.
func TestHoldsLongLived(t *testing.T) {
	day := &calendar.Period{Unit: calendar.Day, Zone: time.UTC}
	for _, tc := range []struct {
		policies []Policy
		want     bool
	}{
		{[]Policy{{Limit: 1, Window: time.Second}, {Limit: 1, Window: 59 * time.Minute}}, false},
		{[]Policy{{Limit: 1, Window: time.Second}, {Limit: 1, Window: time.Hour}}, true},
		{[]Policy{{Limit: 1, Period: day}}, true},
	} {
		if got := holdsLongLived(tc.policies); got != tc.want {
			t.Errorf("holdsLongLived(%+v) = %v; want %v", tc.policies, got, tc.want)
		}
	}
}
