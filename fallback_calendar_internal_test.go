package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/calendar"
)

// The local fallback decides a calendar policy on its share in the period the limiter
// resolved: its scaled copy, compiled again, keeps the period (compiled afresh it had none,
// and the fallback's store refused it).
func TestFallbackKeepsThePeriod(t *testing.T) {
	c := newStoreConfig(false)
	c.res.share = 0.5
	f := newFallback(c)
	p, err := Policy{Name: "daily", Limit: 10, Period: &calendar.Period{Unit: calendar.Day, Zone: time.UTC}}.compile()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	policies := []Policy{p.inPeriod(at)}
	out := make([]PolicyResult, 1)
	for i := range 6 {
		if _, err := f.check(context.Background(), "k", policies, 1, true, out); err != nil {
			t.Fatalf("check %d on the fallback: %v", i+1, err)
		}
		if want := i < 5; out[0].Allowed != want {
			t.Fatalf("check %d on a share of 5 of 10: allowed %v; want %v", i+1, out[0].Allowed, want)
		}
	}
	scaled, _ := f.scaled(policies)
	if got, want := scaled[0].tag(), policies[0].tag(); got != want {
		t.Errorf("the share's tag %q; want the period's, %q", got, want)
	}
	if scaled[0].compiled.params.Start != policies[0].compiled.params.Start || scaled[0].Limit != 5 {
		t.Errorf("the share: start %d, limit %d; want the period's start %d, limit 5", scaled[0].compiled.params.Start, scaled[0].Limit, policies[0].compiled.params.Start)
	}
}
