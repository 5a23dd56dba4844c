package ratelimit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/calendar"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// TestCalendarClockFarBehindRedis: two instances share one Redis, on its clock. One instance's
// clock runs behind by more than the grace minute (the system clock, read as its start plus
// the monotonic clock, keeps an offset for the process's life: a host whose wall clock NTP
// stepped after the process started, a VM that was suspended). It picks yesterday's period,
// whose key Redis expired long ago; written afresh, with a lifetime of a minute, it would admit
// today's quota, spent on the other instance, again each minute. The script refuses the check
// with an error that names the clock instead (found by a review).
func TestCalendarClockFarBehindRedis(t *testing.T) {
	client := redistest.Standalone(t)
	ctx := context.Background()
	now, err := client.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	sinceMidnight := now.Sub(now.UTC().Truncate(24 * time.Hour))
	if sinceMidnight < 2*time.Minute {
		t.Skip("too close to midnight UTC")
	}
	policy := Policy{Name: "daily", Limit: 2, Period: &calendar.Period{Unit: calendar.Day, Zone: time.UTC}}
	prefix := redistest.Prefix(t)
	store := NewRedisStore(client, WithPrefix(prefix))
	good, err := New(store, policy)
	if err != nil {
		t.Fatal(err)
	}
	behind, err := New(store, policy)
	if err != nil {
		t.Fatal(err)
	}
	behind.clock = fakeclock.New(now.Add(-sinceMidnight - time.Minute)) // 23:59 yesterday

	for i := range 2 {
		if d, err := good.Allow(ctx, "k"); err != nil || !d.Allowed {
			t.Fatalf("today's request %d on the good instance: %v, %v", i+1, d.Allowed, err)
		}
	}
	admitted, refused := 0, 0
	for range 2 {
		d, err := behind.Allow(ctx, "k")
		switch {
		case err != nil && strings.Contains(err.Error(), "the instance's clock is behind"):
			refused++
		case err != nil:
			t.Fatal(err)
		case d.Allowed:
			admitted++
		}
	}
	if admitted > 0 || refused != 2 {
		t.Errorf("with today's quota of 2 spent, the instance whose clock is %v behind admitted %d more and got %d errors naming its clock; want 0 and 2", sinceMidnight+time.Minute, admitted, refused)
	}
}
