package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/calendar"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/redis/go-redis/v9"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	z, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// calendarServer is a handler limited by policies on store, whose clock is clock, and a
// function that sends one request and returns its response.
func calendarServer(t *testing.T, store ratelimit.Store, policies ...ratelimit.Policy) func() *http.Response {
	t.Helper()
	l, err := ratelimit.New(store, policies...)
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.Middleware(l, ratelimit.WithKey(func(ratelimit.Request) (string, error) { return "customer-7", nil }),
		ratelimit.WithResponse(ratelimit.Response{IETFDraft: 11}))(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	return func() *http.Response {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		return rec.Result()
	}
}

// TestCalendarDayAcrossClockChanges is the test: 3 a day in America/New_York, on every
// engine. Three allowed at 23:59:59 on 2026-03-07 and the fourth refused with Retry-After 1;
// allowed again at midnight on 2026-03-08, a day of 23 hours, whose end is where the headers
// say; on the day of 25 hours, 2026-11-01, exactly one reset.
func TestCalendarDayAcrossClockChanges(t *testing.T) {
	ny := zone(t, "America/New_York")
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			clock := fakeclock.New(time.Date(2026, 3, 7, 23, 59, 59, 0, ny))
			send := calendarServer(t, e.store(t, ratelimit.WithClock(clock)),
				ratelimit.Policy{Name: "daily", Limit: 3, Period: &calendar.Period{Unit: calendar.Day, Zone: ny}})
			for i := range 3 {
				if r := send(); r.StatusCode != 200 {
					t.Fatalf("request %d at 23:59:59: %d; want 200", i+1, r.StatusCode)
				}
			}
			r := send()
			if r.StatusCode != 429 || r.Header.Get("Retry-After") != "1" {
				t.Fatalf("fourth at 23:59:59: %d, Retry-After %q; want 429, 1", r.StatusCode, r.Header.Get("Retry-After"))
			}
			midnight := time.Date(2026, 3, 8, 0, 0, 0, 0, ny)
			if got, want := r.Header.Get("X-RateLimit-Reset"), itoa(midnight.Unix()); got != want {
				t.Errorf("X-RateLimit-Reset %s; want %s (midnight)", got, want)
			}

			clock.Set(midnight)
			r = send()
			if r.StatusCode != 200 || r.Header.Get("X-RateLimit-Remaining") != "2" {
				t.Fatalf("at midnight: %d, remaining %s; want 200, 2", r.StatusCode, r.Header.Get("X-RateLimit-Remaining"))
			}
			end := time.Date(2026, 3, 9, 0, 0, 0, 0, ny)
			if end.Sub(midnight) != 23*time.Hour {
				t.Fatalf("2026-03-08 is %v long in New York; the test expects 23h", end.Sub(midnight))
			}
			if got, want := r.Header.Get("X-RateLimit-Reset"), itoa(end.Unix()); got != want {
				t.Errorf("X-RateLimit-Reset on 2026-03-08: %s; want %s (23 hours on)", got, want)
			}
			if got := r.Header.Get("RateLimit"); !strings.Contains(got, ";t=82800") {
				t.Errorf("RateLimit %q; want t=82800, the seconds to the day's end", got)
			}
			if got := r.Header.Get("RateLimit-Policy"); got != `"daily";q=3` {
				t.Errorf("RateLimit-Policy %q; want no w: a calendar day has no fixed length", got)
			}
			send()
			send()
			clock.Set(end.Add(-time.Second))
			if r := send(); r.StatusCode != 429 || r.Header.Get("Retry-After") != "1" {
				t.Errorf("at 23:59:59 on 2026-03-08: %d, Retry-After %q; want 429, 1", r.StatusCode, r.Header.Get("Retry-After"))
			}
			clock.Set(end)
			if r := send(); r.StatusCode != 200 {
				t.Errorf("at midnight on 2026-03-09: %d; want 200", r.StatusCode)
			}

			// 2026-11-01 has 25 hours: the quota used at 00:30 (EDT) is still used at 01:30 EST,
			// 25 hours of clock later than midnight less one, and reset once, at the next midnight.
			day := time.Date(2026, 11, 1, 0, 30, 0, 0, ny)
			clock.Set(day)
			for range 3 {
				send()
			}
			resets := 0
			next := time.Date(2026, 11, 2, 0, 0, 0, 0, ny)
			for at := day; at.Before(next.Add(30 * time.Minute)); at = at.Add(15 * time.Minute) {
				clock.Set(at)
				if r := send(); r.StatusCode == 200 {
					resets++
					if at.Before(next) {
						t.Errorf("admitted at %v, before the day's end", at)
					}
					send()
					send()
				}
			}
			if resets != 1 {
				t.Errorf("the 25-hour day reset %d times; want 1", resets)
			}
		})
	}
}

// TestCalendarBillingMonthOn31st: a monthly cycle anchored on 31 January resets on
// 28 February, 31 March and 30 April, at midnight in the zone.
func TestCalendarBillingMonthOn31st(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			clock := fakeclock.New(time.Date(2026, 2, 10, 12, 0, 0, 0, berlin))
			anchor := time.Date(2026, 1, 31, 0, 0, 0, 0, berlin)
			send := calendarServer(t, e.store(t, ratelimit.WithClock(clock)),
				ratelimit.Policy{Name: "monthly", Limit: 1, Period: &calendar.Period{Unit: calendar.Month, Zone: berlin, Anchor: anchor}})
			if r := send(); r.StatusCode != 200 {
				t.Fatalf("first of the cycle: %d", r.StatusCode)
			}
			for _, reset := range []time.Time{
				time.Date(2026, 2, 28, 0, 0, 0, 0, berlin),
				time.Date(2026, 3, 31, 0, 0, 0, 0, berlin),
				time.Date(2026, 4, 30, 0, 0, 0, 0, berlin),
			} {
				clock.Set(reset.Add(-time.Second))
				r := send()
				if r.StatusCode != 429 {
					t.Fatalf("a second before %v: %d; want 429", reset, r.StatusCode)
				}
				if got, want := r.Header.Get("X-RateLimit-Reset"), itoa(reset.Unix()); got != want {
					t.Errorf("before %v: X-RateLimit-Reset %s; want %s", reset, got, want)
				}
				clock.Set(reset)
				if r := send(); r.StatusCode != 200 {
					t.Fatalf("at %v: %d; want 200, a new cycle", reset, r.StatusCode)
				}
			}
		})
	}
}

// TestCalendarHostZoneDoesNotMatter: instances on hosts whose zones are UTC and
// Asia/Shanghai (the TZ of a process of their own each, which nothing of a Period reads) write
// the same key on one Redis and share its count: 2 a day in New York, the third refused.
func TestCalendarHostZoneDoesNotMatter(t *testing.T) {
	if os.Getenv("CALENDAR_HOST_REDIS") != "" {
		return // a host's process: see calendarHost
	}
	addr, prefix := redistest.Addr(t), redistest.Prefix(t)
	var got []string
	for _, tz := range []string{"UTC", "Asia/Shanghai", "UTC"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCalendarHost$", "-test.v")
		cmd.Env = append(os.Environ(), "TZ="+tz, "CALENDAR_HOST_REDIS="+addr, "CALENDAR_HOST_PREFIX="+prefix)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the host in %s: %v\n%s", tz, err, out)
		}
		_, line, ok := strings.Cut(string(out), "decided: ")
		if !ok {
			t.Fatalf("the host in %s printed no decision:\n%s", tz, out)
		}
		line, _, _ = strings.Cut(line, "\n")
		if !strings.Contains(line, "local="+tz) {
			t.Fatalf("the host's process ran in %q; want %s", line, tz)
		}
		got = append(got, line)
	}
	key := func(s string) string { _, k, _ := strings.Cut(s, " key="); return k }
	if key(got[0]) != key(got[1]) || key(got[1]) != key(got[2]) {
		t.Errorf("hosts in UTC and Asia/Shanghai wrote different keys:\n%s", strings.Join(got, "\n"))
	}
	for i, want := range []string{"allowed=true", "allowed=true", "allowed=false"} {
		if !strings.Contains(got[i], want) {
			t.Errorf("host %d: %s; want %s (one count)", i+1, got[i], want)
		}
	}
}

// TestCalendarHost is one host of TestCalendarHostZoneDoesNotMatter, run in a process of its
// own by it; alone it does nothing.
func TestCalendarHost(t *testing.T) {
	addr := os.Getenv("CALENDAR_HOST_REDIS")
	if addr == "" {
		t.Skip("a host of TestCalendarHostZoneDoesNotMatter")
	}
	ny := zone(t, "America/New_York")
	prefix := os.Getenv("CALENDAR_HOST_PREFIX")
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix),
		ratelimit.WithClock(fakeclock.New(time.Date(2026, 7, 4, 23, 0, 0, 0, ny)))) // 03:00 UTC, 11:00 in Shanghai, on July 5
	l := mustNew(t, store, ratelimit.Policy{Name: "daily", Limit: 2, Period: &calendar.Period{Unit: calendar.Day, Zone: ny}})
	d := allow(t, l, "k", 1)
	fmt.Printf("decided: local=%s allowed=%v key=%s\n", time.Local, d.Allowed, ratelimit.StorageKey(prefix, "k", d.Results()[0].Policy, false))
}

// TestCalendarRates: ParsePolicy reads a calendar period after the "@", and its errors name
// the field that is wrong.
func TestCalendarRates(t *testing.T) {
	p, err := ratelimit.ParsePolicy("1000/day@America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	if p.Limit != 1000 || p.Window != 0 || p.Period == nil || p.Period.String() != "day@America/New_York" {
		t.Errorf("1000/day@America/New_York: %+v, period %v", p, p.Period)
	}
	p, err = ratelimit.ParsePolicy("10000 / month@UTC~2026-01-31")
	if err != nil || p.Period.Unit != calendar.Month || !p.Period.Anchor.Equal(time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("a billing month: %+v, %v", p.Period, err)
	}
	for rate, want := range map[string]string{
		"1/day@Mars/Olympus":    `ratelimit: rate "1/day@Mars/Olympus": period "day@Mars/Olympus": zone "Mars/Olympus"`,
		"1/week(someday)@UTC":   `week start "someday"`,
		"1/week@UTC":            `week start "": missing`,
		"1/month@UTC~yesterday": `anchor "yesterday"`,
		"1/fortnight@UTC":       `unit "fortnight"`,
		"1/month":               `window "month" is a unit of the calendar: write its time zone after @`,
		"1/day(monday)@UTC":     `week start "monday": only a week has a first day`,
		"1/day@":                `zone ""`,
	} {
		_, err := ratelimit.ParsePolicy(rate)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePolicy(%q): %v; want an error with %q", rate, err, want)
		}
	}
}

// TestCalendarPolicyRefused: New refuses a calendar policy it cannot count, naming the field.
func TestCalendarPolicyRefused(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(clock))
	day := &calendar.Period{Unit: calendar.Day, Zone: time.UTC}
	for _, c := range []struct {
		policy ratelimit.Policy
		want   string
	}{
		{ratelimit.Policy{Name: "p", Limit: 1, Period: day, Algorithm: algorithms.GCRA{}}, `"p": Algorithm is gcra, which cannot count calendar periods`},
		{ratelimit.Policy{Name: "p", Limit: 1, Period: day, Algorithm: algorithms.SlidingCounter{}}, `Algorithm is sliding_window_counter`},
		{ratelimit.Policy{Name: "p", Limit: 1, Period: day, Window: time.Hour}, `Window is 1h0m0s and Period is day@UTC`},
		{ratelimit.Policy{Name: "p", Limit: 1, Period: day, Lease: time.Millisecond}, `Lease is set on a calendar policy`},
		{ratelimit.Policy{Name: "p", Limit: 1, Period: day, Burst: 5}, `Burst is 5`},
		{ratelimit.Policy{Name: "p", Limit: 0, Period: day}, `Limit is 0`},
		{ratelimit.Policy{Name: "p", Limit: 1, Period: &calendar.Period{Unit: calendar.Day}}, `Period: zone "": missing`},
		{ratelimit.Policy{Name: "p", Limit: 1, Period: &calendar.Period{Unit: calendar.Day, Zone: time.Local}}, `Period: zone "Local"`},
		{ratelimit.Policy{Name: "p", Limit: 1, Period: &calendar.Period{Unit: calendar.Week, Zone: time.UTC, WeekStart: 9}}, `Period: week start "9"`},
		{ratelimit.Policy{Name: "p", Limit: 1, Period: &calendar.Period{Zone: time.UTC}}, `Period: unit`},
		{ratelimit.Policy{Name: "p", Limit: 1, Period: &calendar.Period{Unit: calendar.Month, Zone: time.UTC, Anchor: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)}},
			`Period: anchor "2026-03-02T00:00:00Z": in the future (now is 2026-03-01T12:00:00Z)`},
	} {
		_, err := ratelimit.New(store, c.policy)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v; want an error with %q", c.policy, err, c.want)
		}
	}
	// The name New makes up says what the period is.
	for want, p := range map[string]*calendar.Period{
		"calendar-5-per-day":         day,
		"calendar-5-per-2weeks":      {Unit: calendar.Week, Every: 2, Zone: time.UTC, WeekStart: time.Monday},
		"calendar-5-per-month-cycle": {Unit: calendar.Month, Zone: time.UTC, Anchor: time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC)},
	} {
		l, err := ratelimit.New(store, ratelimit.Policy{Limit: 5, Period: p})
		if err != nil {
			t.Fatal(err)
		}
		d, err := l.Peek(context.Background(), "k")
		if err != nil || d.Policy.Name != want {
			t.Errorf("the name of 5 per %v: %q, %v; want %q", p, d.Policy.Name, err, want)
		}
	}
}

// TestCalendarWithWindows: a calendar quota and a window in one list decide all or nothing
// on every engine: a request one of them refuses is charged to neither.
func TestCalendarWithWindows(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			clock := fakeclock.New(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC))
			l := mustNew(t, e.store(t, ratelimit.WithClock(clock)),
				ratelimit.Policy{Name: "burst", Limit: 2, Window: time.Second},
				ratelimit.Policy{Name: "daily", Limit: 3, Period: &calendar.Period{Unit: calendar.Day, Zone: time.UTC}})
			key := keyOf(t)
			allow(t, l, key, 1)
			allow(t, l, key, 1)
			if d := allow(t, l, key, 1); d.Allowed || d.Policy.Name != "burst" {
				t.Fatalf("third in a second: allowed %v by %q; want refused by burst", d.Allowed, d.Policy.Name)
			}
			clock.Advance(time.Second)
			if d := allow(t, l, key, 1); !d.Allowed || d.Results()[1].Remaining != 0 {
				t.Fatalf("the day's third: allowed %v, daily remaining %d; want allowed, 0 (the refused one was not charged)", d.Allowed, d.Results()[1].Remaining)
			}
			clock.Advance(time.Second)
			d := allow(t, l, key, 1)
			if d.Allowed || d.Policy.Name != "daily" || d.RetryAfter != 14*time.Hour-2*time.Second {
				t.Fatalf("the day's fourth: allowed %v by %q, retry %v; want refused by daily until midnight", d.Allowed, d.Policy.Name, d.RetryAfter)
			}
			if r := allow(t, l, key, 0).Results()[0]; r.Remaining != 2 {
				t.Errorf("burst remaining %d after a request the day refused; want 2: nothing charged", r.Remaining)
			}
		})
	}
}

// TestCalendarLimitChangeKeepsCount: raising a monthly quota on the 15th keeps what was used;
// a new anchor starts its cycle at once, counted afresh (docs/calendar.md).
func TestCalendarLimitChangeKeepsCount(t *testing.T) {
	for _, e := range engines[:2] {
		t.Run(e.name, func(t *testing.T) {
			clock := fakeclock.New(time.Date(2026, 6, 15, 9, 0, 0, 0, time.UTC))
			store := e.store(t, ratelimit.WithClock(clock))
			month := &calendar.Period{Unit: calendar.Month, Zone: time.UTC}
			key := keyOf(t)
			small := mustNew(t, store, ratelimit.Policy{Name: "monthly", Limit: 3000, Period: month})
			allow(t, small, key, 3000)
			big := mustNew(t, store, ratelimit.Policy{Name: "monthly", Limit: 5000, Period: month})
			if d := allow(t, big, key, 0); d.Remaining != 2000 {
				t.Fatalf("after raising 3,000 to 5,000 with 3,000 used: remaining %d; want 2,000", d.Remaining)
			}
			cycle := &calendar.Period{Unit: calendar.Month, Zone: time.UTC, Anchor: time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC)}
			anchored := mustNew(t, store, ratelimit.Policy{Name: "monthly", Limit: 5000, Period: cycle})
			if d := allow(t, anchored, key, 0); d.Remaining != 5000 {
				t.Errorf("after anchoring the month on the 31st: remaining %d; want 5,000, a new cycle", d.Remaining)
			}
		})
	}
}

// TestCalendarKeyExpiresAtPeriodEnd: the Redis key of a period is named by it and expires a
// minute after its end, on the fake clock and on the Redis server's own.
func TestCalendarKeyExpiresAtPeriodEnd(t *testing.T) {
	client := redistest.Standalone(t)
	ny := zone(t, "America/New_York")
	policy := ratelimit.Policy{Name: "daily", Limit: 3, Period: &calendar.Period{Unit: calendar.Day, Zone: ny}}

	prefix := redistest.Prefix(t)
	clock := fakeclock.New(time.Date(2026, 3, 8, 0, 0, 0, 0, ny))
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithClock(clock)), policy)
	d := allow(t, l, "k", 1)
	key := ratelimit.StorageKey(prefix, "k", d.Results()[0].Policy, false)
	if !strings.HasSuffix(key, "_d20260308") {
		t.Errorf("the key of 2026-03-08 is %q; want it to end with the day's name, _d20260308", key)
	}
	ttl, err := client.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := 23*time.Hour + time.Minute; ttl > want || ttl < want-5*time.Second {
		t.Errorf("the key of a 23-hour day lives %v; want 23h1m (its end and a minute)", ttl)
	}

	// The server's clock: the period of now, the key alive until its end and a minute.
	prefix = redistest.Prefix(t) + "server:"
	l = mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix)), policy)
	d = allow(t, l, "k", 1)
	_, end := policy.Period.Bounds(time.Now())
	key = ratelimit.StorageKey(prefix, "k", d.Results()[0].Policy, false)
	if ttl, err = client.PTTL(ctx, key).Result(); err != nil {
		t.Fatal(err)
	}
	if want := time.Until(end) + time.Minute; ttl > want+time.Second || ttl < want-time.Minute {
		t.Errorf("on the server's clock the key lives %v; want about %v (to the day's end in New York and a minute)", ttl, want)
	}
	if d.ResetAfter > time.Until(end)+time.Second || d.ResetAfter < time.Until(end)-time.Minute {
		t.Errorf("ResetAfter %v; want about %v, to the day's end", d.ResetAfter, time.Until(end))
	}
}

// TestCalendarRefund: a refund gives back within its period, and nothing once the period it
// was charged in has ended.
func TestCalendarRefund(t *testing.T) {
	for _, e := range engines[:2] {
		t.Run(e.name, func(t *testing.T) {
			clock := fakeclock.New(time.Date(2026, 6, 30, 23, 0, 0, 0, time.UTC))
			l := mustNew(t, e.store(t, ratelimit.WithClock(clock)),
				ratelimit.Policy{Name: "daily", Limit: 3, Period: &calendar.Period{Unit: calendar.Day, Zone: time.UTC}})
			key := keyOf(t)
			d := allow(t, l, key, 2)
			if err := l.Settle(ctx, key, d, 0); err != nil {
				t.Fatal(err)
			}
			if d := allow(t, l, key, 0); d.Remaining != 3 {
				t.Fatalf("after the refund: remaining %d; want 3", d.Remaining)
			}
			d = allow(t, l, key, 2)
			clock.Advance(2 * time.Hour) // the next day
			allow(t, l, key, 1)
			if err := l.Settle(ctx, key, d, 0); err != nil {
				t.Fatal(err)
			}
			if d := allow(t, l, key, 0); d.Remaining != 2 {
				t.Errorf("a refund of yesterday's charge: remaining today %d; want 2, today's count untouched", d.Remaining)
			}
		})
	}
}

// TestCalendarShadow: a shadow calendar policy counts what it would admit and never denies.
func TestCalendarShadow(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC))
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)),
		ratelimit.Policy{Limit: 100, Window: time.Second},
		ratelimit.Policy{Name: "daily", Limit: 2, Shadow: true, Period: &calendar.Period{Unit: calendar.Day, Zone: time.UTC}})
	for i := range 3 {
		d := allow(t, l, "k", 1)
		if !d.Allowed || d.Results()[1].Allowed != (i < 2) {
			t.Errorf("request %d: allowed %v, the shadow day's verdict %v; want allowed, the day's %v", i+1, d.Allowed, d.Results()[1].Allowed, i < 2)
		}
	}
}
