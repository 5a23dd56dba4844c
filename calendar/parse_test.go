package calendar

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// now is the present of the parsing tests.
var now = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// wantError checks that err is an *Error of the field, whose message has every part.
func wantError(t *testing.T, what string, err error, field string, parts ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Errorf("%s: error %v, want an *Error of field %q", what, err, field)
		return
	}
	if e.Field != field {
		t.Errorf("%s: error %q names field %q, want %q", what, err, e.Field, field)
	}
	for _, part := range parts {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("%s: error %q does not say %q", what, err, part)
		}
	}
}

func TestParseZone(t *testing.T) {
	for _, name := range []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", " Asia/Tokyo "} {
		loc, err := ParseZone(name)
		if err != nil {
			t.Errorf("ParseZone(%q): %v", name, err)
			continue
		}
		if got := loc.String(); got != strings.TrimSpace(name) {
			t.Errorf("ParseZone(%q) = %s", name, got)
		}
	}
	for _, c := range []struct{ name, says string }{
		{"", "missing"},
		{"Local", "host's zone is never used"},
		{"local", "host's zone is never used"},
		{"Mars/Olympus", `"Mars/Olympus": unknown time zone`},
		{"../../etc/passwd", "unknown time zone"},
		{"/etc/localtime", "unknown time zone"},
		{"europe/berlin", "unknown time zone"},
	} {
		_, err := ParseZone(c.name)
		wantError(t, "ParseZone("+c.name+")", err, "zone", c.says)
	}
}

func TestParseWeekday(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Weekday
	}{
		{"monday", time.Monday}, {"Mon", time.Monday}, {"SUNDAY", time.Sunday}, {"sun", time.Sunday},
		{"tue", time.Tuesday}, {"Wednesday", time.Wednesday}, {"thu", time.Thursday}, {"friday", time.Friday},
		{" sat ", time.Saturday},
	} {
		got, err := ParseWeekday(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseWeekday(%q) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "funday", "mo", "1", "monday,"} {
		_, err := ParseWeekday(in)
		wantError(t, "ParseWeekday("+in+")", err, "week start", `"`+in+`"`, "not a day of the week")
	}
}

func TestParseAnchor(t *testing.T) {
	ny := zoneOf(t, "America/New_York")
	santiago := zoneOf(t, "America/Santiago")
	for _, c := range []struct {
		in   string
		zone *time.Location
		want string
	}{
		{"2026-01-31", time.UTC, "2026-01-31T00:00:00Z"},
		{"2026-01-31", ny, "2026-01-31T00:00:00-05:00"},
		{"2022-09-11", santiago, "2022-09-11T01:00:00-03:00"}, // no midnight that day
		{"2026-01-31T09:30:00+01:00", ny, "2026-01-31T03:30:00-05:00"},
		{"2026-03-10T12:00:00Z", time.UTC, "2026-03-10T12:00:00Z"},      // now itself
		{"2026-03-10T13:00:00+01:00", time.UTC, "2026-03-10T12:00:00Z"}, // now, in +01:00
		{"2026-02-01T10:00:00.5Z", time.UTC, "2026-02-01T10:00:00.5Z"},
	} {
		got, err := ParseAnchor(c.in, c.zone, now)
		if err != nil {
			t.Errorf("ParseAnchor(%q, %s): %v", c.in, c.zone, err)
			continue
		}
		if want := instant(t, c.want); !got.Equal(want) || got.Location() != c.zone {
			t.Errorf("ParseAnchor(%q, %s) = %s, want %s in %s", c.in, c.zone, got.Format(time.RFC3339Nano), c.want, c.zone)
		}
	}
	for _, c := range []struct {
		in    string
		zone  *time.Location
		field string
		says  []string
	}{
		{"2026-03-11", time.UTC, "anchor", []string{`"2026-03-11"`, "in the future", "now is 2026-03-10T12:00:00Z"}},
		{"2026-03-10T12:00:01Z", time.UTC, "anchor", []string{"in the future"}},
		{"2026-01-32", time.UTC, "anchor", []string{"not a date"}},
		{"31/01/2026", time.UTC, "anchor", []string{`"31/01/2026"`, "not a date", "RFC 3339"}},
		{"2026-01-31 09:30", time.UTC, "anchor", []string{"not a date"}},
		{"", time.UTC, "anchor", []string{"missing"}},
		{"0000-06-01", time.UTC, "anchor", []string{"year from 1 to 9999"}},
		{"2026-01-31", nil, "zone", []string{"missing"}},
		{"2026-01-31", time.Local, "zone", []string{"host's zone"}},
	} {
		_, err := ParseAnchor(c.in, c.zone, now)
		wantError(t, "ParseAnchor("+c.in+")", err, c.field, c.says...)
	}
}

func TestParsePeriod(t *testing.T) {
	berlin := zoneOf(t, "Europe/Berlin")
	ny := zoneOf(t, "America/New_York")
	for _, c := range []struct {
		in   string
		want Period
	}{
		{"day@Europe/Berlin", Period{Unit: Day, Zone: berlin}},
		{"DAY@Europe/Berlin", Period{Unit: Day, Zone: berlin}},
		{"month@UTC", Period{Unit: Month, Zone: time.UTC}},
		{"year@UTC", Period{Unit: Year, Zone: time.UTC}},
		{"week(sunday)@America/New_York", Period{Unit: Week, Zone: ny, WeekStart: time.Sunday}},
		{"week(Mon)@UTC", Period{Unit: Week, Zone: time.UTC, WeekStart: time.Monday}},
		{"2weeks(monday)@UTC", Period{Unit: Week, Every: 2, Zone: time.UTC, WeekStart: time.Monday}},
		{"3months@UTC", Period{Unit: Month, Every: 3, Zone: time.UTC}},
		{"1day@UTC", Period{Unit: Day, Zone: time.UTC}},
		{" day @ Europe/Berlin ", Period{Unit: Day, Zone: berlin}},
		{"month@UTC~2026-01-31", Period{Unit: Month, Zone: time.UTC, Anchor: instant(t, "2026-01-31T00:00:00Z")}},
		{"month@Europe/Berlin~2026-01-31", Period{Unit: Month, Zone: berlin, Anchor: instant(t, "2026-01-31T00:00:00+01:00")}},
		{"month@Europe/Berlin~2026-01-31T09:30:00+01:00", Period{Unit: Month, Zone: berlin, Anchor: instant(t, "2026-01-31T09:30:00+01:00")}},
		{"year@UTC~2024-02-29", Period{Unit: Year, Zone: time.UTC, Anchor: instant(t, "2024-02-29T00:00:00Z")}},
		{"week@UTC~2026-01-07", Period{Unit: Week, Zone: time.UTC, Anchor: instant(t, "2026-01-07T00:00:00Z")}},
	} {
		got, err := ParsePeriod(c.in, now)
		if err != nil {
			t.Errorf("ParsePeriod(%q): %v", c.in, err)
			continue
		}
		if !samePeriod(got, c.want) {
			t.Errorf("ParsePeriod(%q) = %#v, want %#v", c.in, got, c.want)
		}
		// The text form writes it back, and reads back the same.
		again, err := ParsePeriod(got.String(), now)
		if err != nil || !samePeriod(again, got) {
			t.Errorf("ParsePeriod(%q) = %#v, %v: not %q read again", got.String(), again, err, c.in)
		}
	}
	for _, c := range []struct {
		in, field string
		says      []string
	}{
		{"fortnight@UTC", "unit", []string{`"fortnight"`, "day, week, month or year"}},
		{"d@UTC", "unit", []string{`"d"`}},
		{"@UTC", "unit", nil},
		{"0days@UTC", "every", []string{`"0"`, "1 to 1000"}},
		{"1001days@UTC", "every", []string{`"1001"`}},
		{"99999999999999999999days@UTC", "every", nil},
		{"day", "zone", []string{"missing", "day@Europe/Berlin"}},
		{"day@", "zone", []string{"missing"}},
		{"day@Local", "zone", []string{"host's zone"}},
		{"day@Mars/Olympus", "zone", []string{`"Mars/Olympus"`, "unknown time zone"}},
		{"week@UTC", "week start", []string{"missing", "week(monday)"}},
		{"week(funday)@UTC", "week start", []string{`"funday"`, "not a day of the week"}},
		{"week(monday@UTC", "week start", []string{"parentheses"}},
		{"week(mon)(tue)@UTC", "week start", []string{"parentheses"}},
		{"month(monday)@UTC", "week start", []string{"only a week has a first day, not a month"}},
		{"week(monday)@UTC~2026-01-07", "week start", []string{"not both"}},
		{"month@UTC~2027-01-31", "anchor", []string{`"2027-01-31"`, "in the future"}},
		{"month@UTC~someday", "anchor", []string{`"someday"`, "not a date"}},
		{"month@UTC~", "anchor", []string{"missing"}},
		{"month@Mars~someday", "zone", []string{`"Mars"`}},
	} {
		_, err := ParsePeriod(c.in, now)
		wantError(t, "ParsePeriod("+c.in+")", err, c.field, c.says...)
	}
}

// samePeriod says whether two Periods are the same, their anchors as instants.
func samePeriod(a, b Period) bool {
	return a.Unit == b.Unit && a.Every == b.Every && a.Zone.String() == b.Zone.String() &&
		a.WeekStart == b.WeekStart && a.Anchor.Equal(b.Anchor)
}

func TestPeriodString(t *testing.T) {
	for _, c := range []struct {
		p    Period
		want string
	}{
		{Period{Unit: Day, Zone: zoneOf(t, "Europe/Berlin")}, "day@Europe/Berlin"},
		{Period{Unit: Week, Zone: time.UTC}, "week(sunday)@UTC"},
		{Period{Unit: Week, Every: 2, Zone: time.UTC, WeekStart: time.Monday}, "2weeks(monday)@UTC"},
		{Period{Unit: Month, Every: 1, Zone: time.UTC}, "month@UTC"},
		{Period{Unit: Month, Zone: time.UTC, Anchor: instant(t, "2026-01-31T00:00:00Z")}, "month@UTC~2026-01-31"},
		{Period{Unit: Month, Zone: zoneOf(t, "Europe/Berlin"), Anchor: instant(t, "2026-01-31T08:30:00Z")}, "month@Europe/Berlin~2026-01-31T09:30:00+01:00"},
		{Period{Unit: Week, Zone: time.UTC, Anchor: instant(t, "2026-01-07T00:00:00Z")}, "week@UTC~2026-01-07"},
		{Period{Unit: Day}, "day@"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.p, got, c.want)
		}
	}
}
