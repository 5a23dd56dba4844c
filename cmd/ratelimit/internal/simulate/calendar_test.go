package simulate_test

import (
	"context"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/cmd/ratelimit/internal/simulate"
)

// runCalendar runs sc over the memory store, as the pictures do.
func runCalendar(t *testing.T, sc simulate.CalendarScenario) simulate.CalendarTrace {
	t.Helper()
	tr, err := simulate.RunCalendar(context.Background(), sc, simulate.Memory)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// checkPeriods checks what the limiter made of a calendar scenario, period by period: the
// periods start where want says, one after the other, and cover the picture; each admits the
// first of its arrivals up to the limit and refuses the rest; every state read in a period is
// the limit less what the period has admitted so far (the whole limit at its start).
func checkPeriods(t *testing.T, sc simulate.CalendarScenario, tr simulate.CalendarTrace, want []time.Time) {
	t.Helper()
	if len(tr.Periods) != len(want) {
		t.Fatalf("%d periods %v; want %d starting at %v", len(tr.Periods), tr.Periods, len(want), want)
	}
	for i, p := range tr.Periods {
		if got := sc.From.Add(p.Start); !got.Equal(want[i]) {
			t.Errorf("period %d starts at %v; want %v", i, got, want[i])
		}
		if i > 0 && p.Start != tr.Periods[i-1].End {
			t.Errorf("period %d starts at %v, the one before ends at %v", i, p.Start, tr.Periods[i-1].End)
		}
	}
	if tr.Periods[0].Start > 0 || tr.Periods[len(tr.Periods)-1].End < sc.Length() {
		t.Errorf("the periods %v do not cover [0, %v]", tr.Periods, sc.Length())
	}
	admittedIn := tr.AdmittedIn()
	for i, p := range tr.Periods {
		n := 0 // arrivals so far in p
		for _, r := range tr.Requests {
			if r.At < p.Start || r.At >= p.End {
				continue
			}
			n++
			if want := int64(n) <= tr.Limit; r.Allowed != want {
				t.Errorf("period %d, arrival %d at %v: allowed %v; want %v (limit %d)", i, n, sc.From.Add(r.At), r.Allowed, want, tr.Limit)
			}
		}
		if want := min(n, int(tr.Limit)); admittedIn[i] != want {
			t.Errorf("period %d admitted %d; want %d of %d", i, admittedIn[i], want, n)
		}
		for _, s := range tr.Samples {
			if s.At < p.Start || s.At >= p.End {
				continue
			}
			admitted := 0 // in p, up to the sample
			for _, at := range tr.AdmittedAt() {
				if at >= p.Start && at <= s.At {
					admitted++
				}
			}
			if want := tr.Limit - int64(admitted); s.Remaining != want {
				t.Fatalf("period %d, at %v: Remaining %d; want %d, the limit less the %d admitted since the period began",
					i, sc.From.Add(s.At), s.Remaining, want, admitted)
			}
		}
	}
}

// TestCalendarDSTPicture: the daily quota of calendar-dst.svg has three days, the second of
// 23 hours (New York's clocks go from 02:00 to 03:00 on 2026-03-08), each from a local
// midnight, and admits the first three requests of each.
func TestCalendarDSTPicture(t *testing.T) {
	sc, err := simulate.CalendarDST()
	if err != nil {
		t.Fatal(err)
	}
	tr := runCalendar(t, sc)
	ny := sc.From.Location()
	checkPeriods(t, sc, tr, []time.Time{
		time.Date(2026, 3, 7, 0, 0, 0, 0, ny), time.Date(2026, 3, 8, 0, 0, 0, 0, ny), time.Date(2026, 3, 9, 0, 0, 0, 0, ny),
	})
	for i, want := range []time.Duration{24 * time.Hour, 23 * time.Hour, 24 * time.Hour} {
		if got := tr.Periods[i].End - tr.Periods[i].Start; got != want {
			t.Errorf("day %d is %v long; want %v", i+1, got, want)
		}
	}
	if tr.Admitted() != 9 || tr.Refused() != 71-9 {
		t.Errorf("admitted %d, refused %d; want 9, 62 (71 hours, 3 a day)", tr.Admitted(), tr.Refused())
	}
}

// TestCalendarBillingPicture: the billing month of calendar-billing.svg, anchored on January
// 31, starts again on February 28, March 31 and April 30; a cycle of 31 days refuses the last
// 100 of its 3100 requests, the others admit all of theirs.
func TestCalendarBillingPicture(t *testing.T) {
	sc := simulate.CalendarBilling()
	tr := runCalendar(t, sc)
	day := func(m time.Month, d int) time.Time { return time.Date(2026, m, d, 0, 0, 0, 0, time.UTC) }
	checkPeriods(t, sc, tr, []time.Time{day(time.January, 31), day(time.February, 28), day(time.March, 31), day(time.April, 30)})
	if got, want := tr.AdmittedIn(), []int{2800, 3000, 3000, 3000}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Errorf("admitted per cycle %v; want %v", got, want)
	}
	if tr.Refused() != 200 {
		t.Errorf("refused %d; want 200: 100 on the last day of each cycle of 31 days", tr.Refused())
	}
}
