package ratelimit_test

import (
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/calendar"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// readmeCalendar is README's "Quotas by the calendar" code, as written, over the store and
// the subscription's start it names.
func readmeCalendar(store ratelimit.Store, subscribed time.Time) (*ratelimit.Limiter, error) {
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		log.Fatal(err) // no time zone database on the host: import _ "time/tzdata"
	}
	limiter, err := ratelimit.New(store,
		ratelimit.Policy{Limit: 10, Window: time.Second},
		ratelimit.Policy{Name: "daily", Limit: 1000, Period: &calendar.Period{Unit: calendar.Day, Zone: newYork}},
		ratelimit.Policy{Name: "billing", Limit: 10000, Period: &calendar.Period{Unit: calendar.Month, Zone: newYork, Anchor: subscribed}},
	)
	return limiter, err // README: what the caller reads
}

// What README says of it, behind the middleware: a day of New York from midnight to midnight
// (the 23-hour day of 2026-03-08 included), a cycle anchored on January 31 that starts again
// on February 28, X-RateLimit-Reset at the period's end; and the rates it names read as the
// same policies.
func TestReadmeCalendar(t *testing.T) {
	ny := zone(t, "America/New_York")
	clock := fakeclock.New(time.Date(2026, 2, 27, 23, 50, 0, 0, ny))
	limiter, err := readmeCalendar(ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), time.Date(2026, 1, 31, 0, 0, 0, 0, ny))
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.Middleware(limiter)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func() *http.Response {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		return w.Result()
	}
	// 1000 a day, at most 10 a second: 100 seconds of 10, then the day is spent.
	for i := range 1000 {
		if i%10 == 0 {
			clock.Advance(time.Second)
		}
		if r := send(); r.StatusCode != 200 {
			t.Fatalf("request %d of the day: %d", i+1, r.StatusCode)
		}
	}
	clock.Advance(time.Second)
	r := send()
	if r.StatusCode != 429 {
		t.Fatalf("the day's 1001st: %d; want 429", r.StatusCode)
	}
	if got, want := r.Header.Get("X-RateLimit-Reset"), itoa(time.Date(2026, 2, 28, 0, 0, 0, 0, ny).Unix()); got != want {
		t.Errorf("X-RateLimit-Reset %s; want %s, New York's midnight", got, want)
	}
	clock.Set(time.Date(2026, 2, 28, 0, 0, 0, 0, ny))
	r = send()
	if r.StatusCode != 200 {
		t.Fatalf("at midnight: %d; want 200", r.StatusCode)
	}
	d, err := limiter.Peek(t.Context(), "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Results()[2].Remaining; got != 9999 {
		t.Errorf("the billing cycle on 2026-02-28: remaining %d; want 9999, a new cycle (anchored on the 31st)", got)
	}

	for rate, want := range map[string]string{
		"1000/day@America/New_York":               "day@America/New_York",
		"10000/month@America/New_York~2026-01-31": "month@America/New_York~2026-01-31",
	} {
		p, err := ratelimit.ParsePolicy(rate)
		if err != nil || p.Period == nil || p.Period.String() != want {
			t.Errorf("ParsePolicy(%q): %+v, %v; want the period %s", rate, p, err, want)
		}
	}
}
