package calendar

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

func TestBounds(t *testing.T) {
	ny := zoneOf(t, "America/New_York")
	utc := time.UTC
	day := func(z *time.Location) Period { return Period{Unit: Day, Zone: z} }
	for _, c := range []struct {
		name       string
		p          Period
		at         string
		start, end string
		tag        string
		hours      float64 // the period's length, 0: not checked
	}{
		{"New York, the last second of 2026-03-07", day(ny), "2026-03-07T23:59:59-05:00",
			"2026-03-07T00:00:00-05:00", "2026-03-08T00:00:00-05:00", "d20260307", 24},
		{"New York, 2026-03-08 is 23 hours", day(ny), "2026-03-08T00:00:00-05:00",
			"2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00", "d20260308", 23},
		{"New York, 2026-11-01 is 25 hours", day(ny), "2026-11-01T12:00:00-05:00",
			"2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00", "d20261101", 25},
		{"New York, the second 01:30 of 2026-11-01", day(ny), "2026-11-01T01:30:00-05:00",
			"2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00", "d20261101", 25},
		{"Santiago, a day without midnight starts at 01:00", day(zoneOf(t, "America/Santiago")), "2022-09-11T12:00:00-03:00",
			"2022-09-11T01:00:00-03:00", "2022-09-12T00:00:00-03:00", "d20220911", 23},
		{"Santiago, the day before ends at the jump", day(zoneOf(t, "America/Santiago")), "2022-09-10T23:59:59.999999999-04:00",
			"2022-09-10T00:00:00-04:00", "2022-09-11T01:00:00-03:00", "d20220910", 24},
		{"Havana, a day without midnight", day(zoneOf(t, "America/Havana")), "2023-03-11T23:30:00-05:00",
			"2023-03-11T00:00:00-05:00", "2023-03-12T01:00:00-04:00", "d20230311", 24},
		{"Havana, 2023-03-12 starts at 01:00", day(zoneOf(t, "America/Havana")), "2023-03-12T01:00:00-04:00",
			"2023-03-12T01:00:00-04:00", "2023-03-13T00:00:00-04:00", "d20230312", 23},
		{"Havana, a repeated midnight starts the day at its first", day(zoneOf(t, "America/Havana")), "2023-11-05T00:30:00-05:00",
			"2023-11-05T00:00:00-04:00", "2023-11-06T00:00:00-05:00", "d20231105", 25},
		{"Beirut, a day without midnight", day(zoneOf(t, "Asia/Beirut")), "2023-03-26T10:00:00+03:00",
			"2023-03-26T01:00:00+03:00", "2023-03-27T00:00:00+03:00", "d20230326", 23},
		{"Sao Paulo 2018, a day without midnight", day(zoneOf(t, "America/Sao_Paulo")), "2018-11-04T10:00:00-02:00",
			"2018-11-04T01:00:00-02:00", "2018-11-05T00:00:00-02:00", "d20181104", 23},
		{"Apia, the day before the missing one ends at the jump", day(zoneOf(t, "Pacific/Apia")), "2011-12-29T12:00:00-10:00",
			"2011-12-29T00:00:00-10:00", "2011-12-31T00:00:00+14:00", "d20111229", 24},
		{"Apia, the day after the missing one", day(zoneOf(t, "Pacific/Apia")), "2011-12-31T00:00:00+14:00",
			"2011-12-31T00:00:00+14:00", "2012-01-01T00:00:00+14:00", "d20111231", 24},
		{"UTC, a leap day", day(utc), "2024-02-29T23:59:59Z",
			"2024-02-29T00:00:00Z", "2024-03-01T00:00:00Z", "d20240229", 24},

		{"a week from Monday", Period{Unit: Week, Zone: utc, WeekStart: time.Monday}, "2026-03-08T12:00:00Z",
			"2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z", "w20260302", 168},
		{"a week from Sunday", Period{Unit: Week, Zone: utc, WeekStart: time.Sunday}, "2026-03-08T12:00:00Z",
			"2026-03-08T00:00:00Z", "2026-03-15T00:00:00Z", "w20260308", 168},
		{"a week from Sunday, the Saturday before", Period{Unit: Week, Zone: utc, WeekStart: time.Sunday}, "2026-03-07T23:59:59Z",
			"2026-03-01T00:00:00Z", "2026-03-08T00:00:00Z", "w20260301", 168},
		{"a week from Saturday", Period{Unit: Week, Zone: utc, WeekStart: time.Saturday}, "2026-03-08T12:00:00Z",
			"2026-03-07T00:00:00Z", "2026-03-14T00:00:00Z", "w20260307", 168},
		{"a New York week across spring forward", Period{Unit: Week, Zone: ny, WeekStart: time.Sunday}, "2026-03-10T12:00:00-04:00",
			"2026-03-08T00:00:00-05:00", "2026-03-15T00:00:00-04:00", "w20260308", 167},
		{"a fortnight from Monday", Period{Unit: Week, Every: 2, Zone: utc, WeekStart: time.Monday}, "2026-03-08T12:00:00Z",
			"2026-03-02T00:00:00Z", "2026-03-16T00:00:00Z", "w20260302", 336},

		{"February of a leap year", Period{Unit: Month, Zone: utc}, "2024-02-15T00:00:00Z",
			"2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z", "m202402", 29 * 24},
		{"a Berlin month across the clock change", Period{Unit: Month, Zone: zoneOf(t, "Europe/Berlin")}, "2026-03-31T23:59:59+02:00",
			"2026-03-01T00:00:00+01:00", "2026-04-01T00:00:00+02:00", "m202603", 31*24 - 1},
		{"a Berlin month, its first instant", Period{Unit: Month, Zone: zoneOf(t, "Europe/Berlin")}, "2026-02-28T23:00:00Z",
			"2026-03-01T00:00:00+01:00", "2026-04-01T00:00:00+02:00", "m202603", 31*24 - 1},
		{"a quarter", Period{Unit: Month, Every: 3, Zone: utc}, "2026-05-10T00:00:00Z",
			"2026-04-01T00:00:00Z", "2026-07-01T00:00:00Z", "m202604", 91 * 24},
		{"a month before 1970", Period{Unit: Month, Zone: utc}, "1969-12-31T23:59:59Z",
			"1969-12-01T00:00:00Z", "1970-01-01T00:00:00Z", "m196912", 31 * 24},
		{"a leap year", Period{Unit: Year, Zone: utc}, "2024-07-01T00:00:00Z",
			"2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z", "y2024", 366 * 24},
		{"a Tokyo year", Period{Unit: Year, Zone: zoneOf(t, "Asia/Tokyo")}, "2025-12-31T15:00:00Z",
			"2026-01-01T00:00:00+09:00", "2027-01-01T00:00:00+09:00", "y2026", 365 * 24},
		{"a decade", Period{Unit: Year, Every: 10, Zone: utc}, "2026-07-01T00:00:00Z",
			"2020-01-01T00:00:00Z", "2030-01-01T00:00:00Z", "y2020", 0},

		{"a cycle anchored on the 31st, in February", Period{Unit: Month, Zone: utc, Anchor: instant(t, "2026-01-31T00:00:00Z")}, "2026-03-01T00:00:00Z",
			"2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z", "c20260228", 31 * 24},
		{"a cycle, the period before its anchor", Period{Unit: Month, Zone: utc, Anchor: instant(t, "2026-01-31T00:00:00Z")}, "2026-01-30T23:59:59Z",
			"2025-12-31T00:00:00Z", "2026-01-31T00:00:00Z", "c20251231", 31 * 24},
		{"a cycle at 09:30 in Berlin, across the clock change", Period{Unit: Month, Zone: zoneOf(t, "Europe/Berlin"), Anchor: instant(t, "2026-01-31T09:30:00+01:00")}, "2026-03-31T09:29:59+02:00",
			"2026-02-28T09:30:00+01:00", "2026-03-31T09:30:00+02:00", "c20260228", 31*24 - 1},
		{"a daily cycle at 02:30 New York, on the day 02:30 is skipped", Period{Unit: Day, Zone: ny, Anchor: instant(t, "2026-03-01T02:30:00-05:00")}, "2026-03-08T12:00:00-04:00",
			"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00", "c20260308", 23.5},
		{"a weekly cycle from a Wednesday noon", Period{Unit: Week, Zone: utc, WeekStart: time.Monday, Anchor: instant(t, "2026-01-07T12:00:00Z")}, "2026-03-09T00:00:00Z",
			"2026-03-04T12:00:00Z", "2026-03-11T12:00:00Z", "c20260304", 168},
		{"a yearly cycle anchored on February 29", Period{Unit: Year, Zone: utc, Anchor: instant(t, "2024-02-29T00:00:00Z")}, "2025-06-01T00:00:00Z",
			"2025-02-28T00:00:00Z", "2026-02-28T00:00:00Z", "c20250228", 365 * 24},
	} {
		t.Run(c.name, func(t *testing.T) {
			at := instant(t, c.at)
			start, end := c.p.Bounds(at)
			if want := instant(t, c.start); !start.Equal(want) {
				t.Errorf("start = %s, want %s", start.Format(time.RFC3339Nano), c.start)
			}
			if want := instant(t, c.end); !end.Equal(want) {
				t.Errorf("end = %s, want %s", end.Format(time.RFC3339Nano), c.end)
			}
			if got := c.p.Tag(at); got != c.tag {
				t.Errorf("Tag = %q, want %q", got, c.tag)
			}
			if got := end.Sub(start).Hours(); c.hours != 0 && got != c.hours {
				t.Errorf("length = %vh, want %vh", got, c.hours)
			}
			if start.Location() != c.p.Zone || end.Location() != c.p.Zone {
				t.Errorf("bounds in %s and %s, want %s", start.Location(), end.Location(), c.p.Zone)
			}
			checkInvariants(t, c.p, at)
		})
	}
}

// TestNewYorkDaysAtTheClockChanges: the day of 2026-03-07 ends at 00:00 of 2026-03-08, a day
// of 23 hours, and the 25 hours of 2026-11-01 hold exactly one boundary: the one at their
// end. The instants go by hour from noon the day before, so a day taken as 24 hours from
// midnight would put a boundary at 23:00 of 2026-11-01.
func TestNewYorkDaysAtTheClockChanges(t *testing.T) {
	ny := zoneOf(t, "America/New_York")
	p := Period{Unit: Day, Zone: ny}
	for _, c := range []struct {
		from       string // noon the day before
		boundaries []string
	}{
		{"2026-03-07T12:00:00-05:00", []string{"2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00"}},
		{"2026-10-31T12:00:00-04:00", []string{"2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00"}},
	} {
		from := instant(t, c.from)
		var got []string
		prev := p.Index(from)
		for at := from; at.Before(from.Add(48 * time.Hour)); at = at.Add(time.Hour) {
			if k := p.Index(at); k != prev {
				if k != prev+1 {
					t.Errorf("Index went from %d to %d at %s", prev, k, at.In(ny))
				}
				start, _ := p.Bounds(at)
				if !start.Equal(at) {
					t.Errorf("the period begun by %s starts at %s", at.In(ny), start)
				}
				got = append(got, at.In(ny).Format(time.RFC3339))
				prev = k
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.boundaries) {
			t.Errorf("from %s: boundaries %v, want %v", c.from, got, c.boundaries)
		}
	}
}

// TestCycleStarts walks billing cycles from their anchor, each period's start from the one
// before's end.
func TestCycleStarts(t *testing.T) {
	utc := time.UTC
	for _, c := range []struct {
		name   string
		p      Period
		starts []string // from the anchor's period on
		tags   []string
	}{
		{"monthly from January 31", Period{Unit: Month, Zone: utc, Anchor: instant(t, "2026-01-31T00:00:00Z")},
			[]string{"2026-01-31", "2026-02-28", "2026-03-31", "2026-04-30", "2026-05-31", "2026-06-30", "2026-07-31"},
			[]string{"c20260131", "c20260228", "c20260331", "c20260430", "c20260531", "c20260630", "c20260731"}},
		{"monthly from January 30, in a leap year", Period{Unit: Month, Zone: utc, Anchor: instant(t, "2024-01-30T00:00:00Z")},
			[]string{"2024-01-30", "2024-02-29", "2024-03-30", "2024-04-30"}, nil},
		{"yearly from February 29", Period{Unit: Year, Zone: utc, Anchor: instant(t, "2024-02-29T00:00:00Z")},
			[]string{"2024-02-29", "2025-02-28", "2026-02-28", "2027-02-28", "2028-02-29", "2029-02-28"},
			[]string{"c20240229", "c20250228", "c20260228", "c20270228", "c20280229", "c20290228"}},
		{"every two months from March 31", Period{Unit: Month, Every: 2, Zone: utc, Anchor: instant(t, "2026-03-31T00:00:00Z")},
			[]string{"2026-03-31", "2026-05-31", "2026-07-31", "2026-09-30", "2026-11-30", "2027-01-31"}, nil},
		{"every two days", Period{Unit: Day, Every: 2, Zone: utc, Anchor: instant(t, "2026-02-27T00:00:00Z")},
			[]string{"2026-02-27", "2026-03-01", "2026-03-03"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			at := c.p.Anchor
			for i, want := range c.starts {
				start, end := c.p.Bounds(at)
				if got := start.In(utc).Format(time.DateOnly); got != want || !start.Equal(start.Truncate(24*time.Hour)) {
					t.Errorf("cycle %d starts %s, want %s", i, start.Format(time.RFC3339), want)
				}
				if got := c.p.Index(at); got != int64(i) {
					t.Errorf("cycle %d: Index = %d", i, got)
				}
				if c.tags != nil {
					if got := c.p.Tag(at); got != c.tags[i] {
						t.Errorf("cycle %d: Tag = %q, want %q", i, got, c.tags[i])
					}
				}
				checkInvariants(t, c.p, at)
				at = end
			}
		})
	}
}

// TestHostZoneDoesNotMatter: the same periods, indices and tags whatever time.Local is, for
// instants made in it.
func TestHostZoneDoesNotMatter(t *testing.T) {
	saved := time.Local
	t.Cleanup(func() { time.Local = saved })
	periods := []Period{
		{Unit: Day, Zone: zoneOf(t, "America/New_York")},
		{Unit: Day, Zone: time.UTC},
		{Unit: Week, Zone: zoneOf(t, "Europe/Berlin"), WeekStart: time.Monday},
		{Unit: Month, Zone: zoneOf(t, "Asia/Kolkata")},
		{Unit: Year, Zone: zoneOf(t, "Pacific/Auckland")},
		{Unit: Month, Zone: zoneOf(t, "America/Santiago"), Anchor: instant(t, "2024-01-31T00:00:00-03:00")},
	}
	answers := func() []string {
		var out []string
		for _, p := range periods {
			for at := time.Unix(1767225600, 0); at.Before(time.Unix(1798761600, 0)); at = at.Add(97 * time.Hour) {
				start, end := p.Bounds(at) // at is in time.Local
				out = append(out, fmt.Sprintf("%s %s %s %d %s", p, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), p.Index(at), p.Tag(at)))
			}
		}
		return out
	}
	var first []string
	for _, host := range []string{"UTC", "Asia/Shanghai", "America/Los_Angeles", "Pacific/Kiritimati"} {
		time.Local = zoneOf(t, host)
		got := answers()
		if first == nil {
			first = got
			continue
		}
		for i := range got {
			if got[i] != first[i] {
				t.Fatalf("with the host in %s: %s, with it in UTC: %s", host, got[i], first[i])
			}
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name  string
		p     Period
		field string // "": valid
	}{
		{"a day in UTC", Period{Unit: Day, Zone: time.UTC}, ""},
		{"no unit", Period{Zone: time.UTC}, "unit"},
		{"an unknown unit", Period{Unit: 9, Zone: time.UTC}, "unit"},
		{"every −1", Period{Unit: Day, Every: -1, Zone: time.UTC}, "every"},
		{"every too many", Period{Unit: Day, Every: MaxEvery + 1, Zone: time.UTC}, "every"},
		{"every the most", Period{Unit: Day, Every: MaxEvery, Zone: time.UTC}, ""},
		{"no zone", Period{Unit: Day}, "zone"},
		{"the host's zone", Period{Unit: Day, Zone: time.Local}, "zone"},
		{"a week start out of range", Period{Unit: Week, Zone: time.UTC, WeekStart: 7}, "week start"},
		{"an anchor in year 0", Period{Unit: Month, Zone: time.UTC, Anchor: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)}, "anchor"},
	} {
		err := c.p.Validate()
		e, _ := err.(*Error)
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.field != "" && (e == nil || e.Field != c.field):
			t.Errorf("%s: Validate() = %v, want an *Error of field %q", c.name, err, c.field)
		}
	}
}

// TestInvalidPeriodsDoNotFail: a Period Validate refuses still answers, as documented.
func TestInvalidPeriodsDoNotFail(t *testing.T) {
	at := instant(t, "2026-03-08T12:00:00Z")
	for _, c := range []struct {
		p    Period
		like Period
	}{
		{Period{Unit: Day}, Period{Unit: Day, Zone: time.UTC}},
		{Period{Zone: time.UTC}, Period{Unit: Day, Zone: time.UTC}},
		{Period{Unit: Month, Every: -3, Zone: time.UTC}, Period{Unit: Month, Zone: time.UTC}},
		{Period{Unit: Week, WeekStart: 9, Zone: time.UTC}, Period{Unit: Week, WeekStart: time.Tuesday, Zone: time.UTC}},
	} {
		s, e := c.p.Bounds(at)
		ws, we := c.like.Bounds(at)
		if !s.Equal(ws) || !e.Equal(we) || c.p.Tag(at) != c.like.Tag(at) {
			t.Errorf("%#v: [%s, %s) %s, want [%s, %s) %s", c.p, s, e, c.p.Tag(at), ws, we, c.like.Tag(at))
		}
	}
}

// TestAtEveryClockChange checks the invariants at every change of clock of the fuzz zones
// from 1990 to 2040, for every unit, calendar-aligned and as cycles anchored at the wall
// clock around the change (so that a cycle starts in the hour the clock skips or repeats),
// a week, a month and a year before it.
func TestAtEveryClockChange(t *testing.T) {
	end := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	changes := 0
	for _, name := range fuzzZones {
		zone := zoneOf(t, name)
		for at := time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC); ; {
			_, next := at.In(zone).ZoneBounds()
			if next.IsZero() || next.After(end) {
				break
			}
			at = next
			changes++
			for _, d := range []time.Duration{-90 * time.Minute, -time.Nanosecond, 0, 30 * time.Minute, 90 * time.Minute} {
				x := at.Add(d)
				l := x.In(zone)
				for _, p := range []Period{
					{Unit: Day, Zone: zone},
					{Unit: Week, Zone: zone, WeekStart: l.Weekday()},
					{Unit: Month, Zone: zone},
					{Unit: Year, Zone: zone},
					{Unit: Day, Zone: zone, Anchor: l.AddDate(0, 0, -7)},
					{Unit: Week, Zone: zone, Anchor: l.AddDate(0, 0, -7)},
					{Unit: Month, Zone: zone, Anchor: l.AddDate(0, -1, 0)},
					{Unit: Year, Zone: zone, Anchor: l.AddDate(-1, 0, 0)},
				} {
					checkInvariants(t, p, x)
				}
			}
		}
	}
	if changes < 500 {
		t.Fatalf("only %d changes of clock found: is the zone database there?", changes)
	}
}

// fuzzZones are zones with the clock changes that make periods hard: at midnight, by half an
// hour, by a whole day, twice a year and by the moon (Casablanca's Ramadan).
var fuzzZones = []string{
	"UTC", "America/New_York", "America/Santiago", "America/Havana", "Asia/Beirut",
	"America/Sao_Paulo", "Pacific/Apia", "Pacific/Kiritimati", "Europe/Berlin",
	"Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Chatham", "America/St_Johns",
	"Africa/Casablanca", "Antarctica/Troll", "Europe/Dublin", "Asia/Tehran", "America/Nuuk",
	"Asia/Gaza", "Africa/Cairo",
}

func FuzzBounds(f *testing.F) {
	f.Add(int64(1772946000), int64(0), uint8(1), uint8(0), uint8(1), uint8(0), int64(0))             // New York, 2026-03-08
	f.Add(int64(1662868800), int64(0), uint8(2), uint8(0), uint8(1), uint8(0), int64(0))             // Santiago's missing midnight
	f.Add(int64(1699203600), int64(0), uint8(3), uint8(0), uint8(1), uint8(0), int64(0))             // Havana's repeated midnight
	f.Add(int64(1325239200), int64(0), uint8(6), uint8(0), uint8(1), uint8(0), int64(0))             // Apia's missing day
	f.Add(int64(1772236800), int64(0), uint8(0), uint8(2), uint8(1), uint8(0), int64(1769817600))    // a month from 2026-01-31
	f.Add(int64(1709164800), int64(5), uint8(3), uint8(3), uint8(3), uint8(0x80), int64(1709164800)) // a year from 2024-02-29
	f.Add(int64(1772946000), int64(1), uint8(8), uint8(1), uint8(2), uint8(1), int64(0))             // a Berlin fortnight
	zones := make([]*time.Location, len(fuzzZones))
	for i, name := range fuzzZones {
		zones[i] = zoneOf(f, name)
	}
	const (
		from = -2208988800 // 1900-01-01
		span = 9467280000  // 300 years
	)
	// within maps any number onto [1900, 2200), keeping those already in it.
	within := func(sec int64) int64 { return from + ((sec-from)%span+span)%span }
	f.Fuzz(func(t *testing.T, sec, nsec int64, zone, unit, every, weekStart uint8, anchor int64) {
		p := Period{
			Unit:      Day + Unit(unit%4),
			Every:     int(every % 5),
			Zone:      zones[int(zone)%len(zones)],
			WeekStart: time.Weekday(weekStart % 7),
		}
		if anchor != 0 {
			p.Anchor = time.Unix(within(anchor), 0)
			if weekStart >= 0x80 { // at a local midnight, as a date anchor is
				a := p.Anchor.In(p.Zone)
				p.Anchor = resolve(time.Date(a.Year(), a.Month(), a.Day(), 0, 0, 0, 0, time.UTC), p.Zone)
			}
		}
		at := time.Unix(within(sec), ((nsec%1e9)+1e9)%1e9)
		if unit >= 0x80 { // near the zone's next change of clock, where periods are hard
			if _, next := at.In(p.Zone).ZoneBounds(); !next.IsZero() {
				at = next.Add(time.Duration(nsec%(3*3600e9)) - 90*time.Minute)
			}
		}
		if anchor != 0 && weekStart&0x40 != 0 {
			// An anchor whose wall clock is near at's, whole periods before it: a cycle whose
			// start falls in an hour the clock skips or repeats.
			k := 1 + int(uint64(anchor)%400)
			l := at.In(p.Zone)
			switch p.Unit {
			case Day:
				p.Anchor = l.AddDate(0, 0, -k)
			case Week:
				p.Anchor = l.AddDate(0, 0, -7*k)
			case Month:
				p.Anchor = l.AddDate(0, -k, 0)
			case Year:
				p.Anchor = l.AddDate(-k, 0, 0)
			}
		}
		checkInvariants(t, p, at)
	})
}

// checkInvariants checks what holds of every period: it holds the instant; its start and its
// last instant give it back, its end gives the next one; its index and tag are the same
// across it and change at its end; and it starts where the calendar says, by a test that
// reads its wall clock and does not use resolve: the instant just before the start shows a
// wall clock before the nominal one (the civil start the tag names, at the anchor's time of
// day), the start one at or after it, and no instant before it does.
func checkInvariants(t *testing.T, p Period, at time.Time) {
	t.Helper()
	start, end := p.Bounds(at)
	show := func(x time.Time) string { return x.In(p.Zone).Format(time.RFC3339Nano) }
	if at.Before(start) || !at.Before(end) {
		t.Fatalf("%s: Bounds(%s) = [%s, %s), which does not hold it", p, show(at), show(start), show(end))
	}
	for _, x := range []time.Time{start, end.Add(-1)} {
		if s, e := p.Bounds(x); !s.Equal(start) || !e.Equal(end) {
			t.Fatalf("%s: Bounds(%s) = [%s, %s), want [%s, %s)", p, show(x), show(s), show(e), show(start), show(end))
		}
	}
	s2, e2 := p.Bounds(end)
	if !s2.Equal(end) || !e2.After(end) {
		t.Fatalf("%s: Bounds(end %s) = [%s, %s), want a period from it", p, show(end), show(s2), show(e2))
	}
	k, tag := p.Index(at), p.Tag(at)
	if p.Index(start) != k || p.Index(end.Add(-1)) != k || p.Tag(start) != tag || p.Tag(end.Add(-1)) != tag {
		t.Fatalf("%s: Index or Tag differ across [%s, %s): %d %s", p, show(start), show(end), k, tag)
	}
	if p.Index(end) <= k || p.Tag(end) == tag {
		t.Fatalf("%s: the period after %s (%d) is %s (%d)", p, tag, k, p.Tag(end), p.Index(end))
	}
	// The next Index is one more, unless the periods between have no instants.
	for skipped := k + 1; skipped < p.Index(end); skipped++ {
		if s := p.compiled().start(skipped); !s.Equal(end) {
			t.Fatalf("%s: the period after %d is %d, but %d starts at %s, not at the end %s", p, k, p.Index(end), skipped, show(s), show(end))
		}
	}
	longest := map[Unit]time.Duration{Day: 24 * time.Hour, Week: 7 * 24 * time.Hour, Month: 31 * 24 * time.Hour, Year: 366 * 24 * time.Hour}[p.Unit]
	if d := end.Sub(start); d > time.Duration(max(p.Every, 1))*longest+50*time.Hour {
		t.Fatalf("%s: [%s, %s) lasts %s", p, show(start), show(end), d)
	}

	nominal := nominalStart(t, p, tag)
	if before := wallOf(start.Add(-1), p.Zone); !before.Before(nominal) {
		t.Fatalf("%s: period %s starts at %s, but the clock showed %s already at %s", p, tag, show(start), nominal.Format(time.DateTime), before.Format(time.DateTime+".999999999"))
	}
	if got := wallOf(start, p.Zone); got.Before(nominal) {
		t.Fatalf("%s: period %s starts at %s, before its nominal %s", p, tag, show(start), nominal.Format(time.DateTime))
	}
	// And no instant of the 30 hours before shows it yet (the clock may have shown it, then
	// been set back): between two changes of the zone's offset the clock runs forward, so
	// each stretch shows the most just before its end.
	for x := start.Add(-1); ; {
		from, _ := x.In(p.Zone).ZoneBounds()
		if from.IsZero() || from.Before(start.Add(-window)) {
			break
		}
		x = from.Add(-1)
		if w := wallOf(x, p.Zone); !w.Before(nominal) {
			t.Fatalf("%s: period %s starts at %s, but the clock showed %s at %s, before it", p, tag, show(start), w.Format(time.DateTime), show(x))
		}
	}
}

// nominalStart returns the wall clock (fields in UTC) at which a period starts by the
// calendar, from its tag and the Period's anchor.
func nominalStart(t *testing.T, p Period, tag string) time.Time {
	t.Helper()
	digits := tag[1:]
	for len(digits) < 8 {
		digits += "01"[len(digits)%2 : len(digits)%2+1] // y2026 → 20260101, m202603 → 20260301
	}
	n, err := strconv.Atoi(digits)
	if err != nil || len(digits) != 8 {
		t.Fatalf("tag %q is not a letter and a date", tag)
	}
	w := time.Date(n/10000, time.Month(n/100%100), n%100, 0, 0, 0, 0, time.UTC)
	if !p.Anchor.IsZero() {
		a := wallOf(p.Anchor, p.Zone)
		w = w.Add(a.Sub(a.Truncate(24 * time.Hour)))
	}
	return w
}

// BenchmarkBounds measures a period's bounds, as a check of a calendar policy would ask them
// (a limiter may keep them until the end instead).
func BenchmarkBounds(b *testing.B) {
	at := instant(b, "2026-03-08T12:00:00-04:00")
	for _, c := range []struct {
		name string
		p    Period
	}{
		{"day/UTC", Period{Unit: Day, Zone: time.UTC}},
		{"day/New_York", Period{Unit: Day, Zone: zoneOf(b, "America/New_York")}},
		{"month/Berlin/anchored", Period{Unit: Month, Zone: zoneOf(b, "Europe/Berlin"), Anchor: instant(b, "2026-01-31T00:00:00+01:00")}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.p.Bounds(at)
			}
		})
	}
}
