package calendar

import (
	"testing"
	"time"
	_ "time/tzdata" // the same zones on every host that runs the tests
)

// zoneOf loads a zone of the test database or fails the test.
func zoneOf(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

// instant reads an RFC 3339 time or fails the test.
func instant(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time.Parse(%q): %v", s, err)
	}
	return v
}

// wallClock reads "2006-01-02 15:04:05" as a wall clock (fields in UTC).
func wallClock(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.DateTime, s)
	if err != nil {
		t.Fatalf("time.Parse(%q): %v", s, err)
	}
	return v
}

func TestResolve(t *testing.T) {
	for _, c := range []struct {
		name, zone, wall, want string
	}{
		{"an ordinary midnight", "Europe/Berlin", "2026-03-01 00:00:00", "2026-03-01T00:00:00+01:00"},
		{"UTC", "UTC", "2024-02-29 13:14:15", "2024-02-29T13:14:15Z"},
		{"New York's midnight before spring forward", "America/New_York", "2026-03-08 00:00:00", "2026-03-08T00:00:00-05:00"},
		{"a wall clock New York skips is the jump", "America/New_York", "2026-03-08 02:30:00", "2026-03-08T03:00:00-04:00"},
		{"a wall clock New York repeats is its first", "America/New_York", "2026-11-01 01:30:00", "2026-11-01T01:30:00-04:00"},
		// Zones that set their clocks forward at midnight: the day starts at 01:00.
		{"Santiago skipped midnight", "America/Santiago", "2022-09-11 00:00:00", "2022-09-11T01:00:00-03:00"},
		{"Havana skipped midnight", "America/Havana", "2023-03-12 00:00:00", "2023-03-12T01:00:00-04:00"},
		{"Beirut skipped midnight", "Asia/Beirut", "2023-03-26 00:00:00", "2023-03-26T01:00:00+03:00"},
		{"Sao Paulo skipped midnight (2018)", "America/Sao_Paulo", "2018-11-04 00:00:00", "2018-11-04T01:00:00-02:00"},
		{"the last instant before Santiago's jump", "America/Santiago", "2022-09-10 23:59:59", "2022-09-10T23:59:59-04:00"},
		// Havana sets its clock back from 01:00 to 00:00: midnight happens twice.
		{"Havana repeated midnight is its first", "America/Havana", "2023-11-05 00:00:00", "2023-11-05T00:00:00-04:00"},
		// Santiago sets its clock back from 00:00 to 23:00: the 23:00 of the day before repeats.
		{"Santiago repeated 23:30 is its first", "America/Santiago", "2023-04-01 23:30:00", "2023-04-01T23:30:00-03:00"},
		{"Santiago midnight after the fall back", "America/Santiago", "2023-04-02 00:00:00", "2023-04-02T00:00:00-04:00"},
		// Samoa skipped the whole of 2011-12-30, going from UTC−10 to UTC+14.
		{"Apia's missing day", "Pacific/Apia", "2011-12-30 00:00:00", "2011-12-31T00:00:00+14:00"},
		{"Apia's missing day's noon", "Pacific/Apia", "2011-12-30 12:00:00", "2011-12-31T00:00:00+14:00"},
		{"Apia the day before", "Pacific/Apia", "2011-12-29 23:59:59", "2011-12-29T23:59:59-10:00"},
		{"Lord Howe skips half an hour", "Australia/Lord_Howe", "2026-10-04 02:15:00", "2026-10-04T02:30:00+11:00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := resolve(wallClock(t, c.wall), zoneOf(t, c.zone))
			if want := instant(t, c.want); !got.Equal(want) {
				t.Errorf("resolve(%s in %s) = %s, want %s", c.wall, c.zone, got.In(zoneOf(t, c.zone)).Format(time.RFC3339), c.want)
			}
		})
	}
}

func TestDayArithmetic(t *testing.T) {
	for _, c := range []struct {
		y    int
		m    time.Month
		d    int
		want int64
	}{
		{1970, 1, 1, 0}, {1970, 1, 2, 1}, {1969, 12, 31, -1}, {2000, 3, 1, 11017}, {2026, 3, 8, 20520},
	} {
		if got := dayNumber(c.y, c.m, c.d); got != c.want {
			t.Errorf("dayNumber(%d-%02d-%02d) = %d, want %d", c.y, c.m, c.d, got, c.want)
		}
		if y, m, d := dateOf(c.want); y != c.y || m != c.m || d != c.d {
			t.Errorf("dateOf(%d) = %d-%02d-%02d, want %d-%02d-%02d", c.want, y, m, d, c.y, c.m, c.d)
		}
	}
	for _, c := range []struct {
		y    int
		m    time.Month
		want int
	}{{2024, 2, 29}, {2025, 2, 28}, {1900, 2, 28}, {2000, 2, 29}, {2026, 4, 30}, {2026, 12, 31}} {
		if got := daysIn(c.y, c.m); got != c.want {
			t.Errorf("daysIn(%d, %s) = %d, want %d", c.y, c.m, got, c.want)
		}
	}
	for _, c := range []struct{ a, b, want int64 }{{7, 2, 3}, {-7, 2, -4}, {-8, 2, -4}, {0, 5, 0}, {-1, 7, -1}} {
		if got := floorDiv(c.a, c.b); got != c.want {
			t.Errorf("floorDiv(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
