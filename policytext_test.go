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
		{in: "100/99999999999999999999d", err: "is not a unit"},
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
