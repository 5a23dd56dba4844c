package ratelimit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

func TestParsePolicy(t *testing.T) {
	for _, c := range []struct {
		in     string
		limit  int64
		window time.Duration
		err    string
	}{
		{in: "100/min", limit: 100, window: time.Minute},
		{in: "10/s", limit: 10, window: time.Second},
		{in: "5000/h", limit: 5000, window: time.Hour},
		{in: "20/10s", limit: 20, window: 10 * time.Second},
		{in: "1000/day", limit: 1000, window: 24 * time.Hour},
		{in: "3/2days", limit: 3, window: 48 * time.Hour},
		{in: "5/1m30s", limit: 5, window: 90 * time.Second},
		{in: " 1_000 / 250ms ", limit: 1000, window: 250 * time.Millisecond},
		{in: "60/Minutes", limit: 60, window: time.Minute},
		{in: "100", err: `rate "100": want <limit>/<window>`},
		{in: "x/min", err: `limit "x" is not a whole number`},
		{in: "/min", err: `limit "" is not a whole number`},
		{in: "0/min", err: "limit 0: it must be at least 1"},
		{in: "-5/min", err: "limit -5: it must be at least 1"},
		{in: "100/fortnight", err: `window "fortnight" is not a unit (ms, s, min, h, d) or a duration`},
		{in: "100/", err: `window "" is not a unit`},
		{in: "100/0s", err: `window "0s": it must be positive`},
		{in: "100/99999999999999999999d", err: "it must be at most 366 days"},
		{in: "100/1d", limit: 100, window: 24 * time.Hour},
		{in: "100/1d12h", limit: 100, window: 36 * time.Hour},
		{in: "1/366d", limit: 1, window: 366 * 24 * time.Hour},
		{in: "1/367d", err: `window "367d": it must be at most 366 days`},
		{in: "1/8785h", err: `window "8785h": it must be at most 366 days`},
		{in: "1/9999999d", err: `window "9999999d": it must be at most 366 days`},
	} {
		p, err := ratelimit.ParsePolicy(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %+v, %v; want an error containing %q", c.in, p, err, c.err)
		case c.err == "" && (err != nil || p != ratelimit.Policy{Limit: c.limit, Window: c.window}):
			t.Errorf("%q: %+v, %v; want %d per %v", c.in, p, err, c.limit, c.window)
		}
	}
	// What it returns is a policy New takes as it is.
	p, _ := ratelimit.ParsePolicy("100/min")
	if _, err := ratelimit.New(ratelimit.NewMemoryStore(), p); err != nil {
		t.Fatal(err)
	}
}

// FuzzParsePolicy: any text is a policy New can validate, or an error naming the rate.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{"100/min", "20/10s", "5/1m30s", "x/y", "1/", "9999999999999999999/d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ratelimit.ParsePolicy(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "ratelimit: rate ") {
				t.Fatalf("%q: error %q does not name the rate", s, err)
			}
			return
		}
		if p.Limit < 1 || p.Window <= 0 {
			t.Fatalf("%q: %+v", s, p)
		}
	})
}

// TestParseDuration: days are a unit of every duration the library reads, alone or leading a Go
// duration, and the rates' unit names are accepted too; a window longer than 366 days, the
// longest Policy.Window, is refused by name (a rules file's "window: 1d" was refused while
// "rate: 1000/day" worked, and "1/367d" said "not a unit").
func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "1d", want: 24 * time.Hour},
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "1d12h30m", want: 36*time.Hour + 30*time.Minute},
		{in: "366d", want: 366 * 24 * time.Hour},
		{in: "367d", want: 367 * 24 * time.Hour},
		{in: "2days", want: 48 * time.Hour},
		{in: "day", want: 24 * time.Hour},
		{in: "10sec", want: 10 * time.Second},
		{in: "1m30s", want: 90 * time.Second},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: "-1d", want: -24 * time.Hour},
		{in: "-1s", want: -time.Second},
		{in: "0", want: 0},
		{in: "1x", err: `ratelimit: duration "1x": want a duration such as 1s, 1m30s, 250ms or 1d`},
		{in: "", err: `ratelimit: duration "": want a duration`},
		{in: "1.5d", err: `duration "1.5d": want a duration`},
		{in: "d12h", err: `duration "d12h": want a duration`},
		{in: "200000d", err: `duration "200000d": out of range`},
		{in: "99999999999999999999d", err: `out of range`},
		{in: "9999999999h", err: `duration "9999999999h": out of range`},
	} {
		d, err := ratelimit.ParseDuration(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %v, %v; want an error containing %q", c.in, d, err, c.err)
		case c.err == "" && (err != nil || d != c.want):
			t.Errorf("%q: %v, %v; want %v", c.in, d, err, c.want)
		}
	}
}

// TestWindowBoundNamed: New names the longest window in days, as it is written in rules files and
// rates, not as 8784h0m0s.
func TestWindowBoundNamed(t *testing.T) {
	_, err := ratelimit.New(ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1, Window: 367 * 24 * time.Hour})
	if want := `ratelimit: invalid policy "gcra-1-per-367d": Window is 367d; it must be at most 366 days`; err == nil || err.Error() != want {
		t.Fatalf("New: %v; want %s", err, want)
	}
}
