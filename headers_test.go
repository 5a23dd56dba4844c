package ratelimit

import (
	"encoding/json"
	"net/textproto"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
)

func TestHeaderKeysAreCanonical(t *testing.T) {
	for i, name := range fieldNames {
		if got := textproto.CanonicalMIMEHeaderKey(name); got != fieldKeys[i] {
			t.Errorf("%s: canonical %q, but the key written is %q", name, got, fieldKeys[i])
		}
	}
}

func TestRetrySeconds(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int64
	}{
		{algorithms.Never, 0}, // no Retry-After: waiting does not help
		{-time.Second, 1},
		{0, 1},
		{time.Nanosecond, 1},
		{time.Second, 1},
		{time.Second + time.Microsecond, 2},
		{5333334 * time.Microsecond, 6},
		{59 * time.Second, 59},
		{366 * 24 * time.Hour, 366 * 24 * 3600},
	} {
		if got := retrySeconds(c.d); got != c.want {
			t.Errorf("retrySeconds(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

func TestResetEpoch(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		now  time.Time
		d    time.Duration
		want int64
	}{
		{t0, 0, 1_700_000_000},
		{t0, -time.Second, 1_700_000_000},
		{t0, time.Microsecond, 1_700_000_001},
		{t0, time.Second, 1_700_000_001},
		{t0.Add(500 * time.Millisecond), 500 * time.Millisecond, 1_700_000_001},
		{t0.Add(500 * time.Millisecond), 501 * time.Millisecond, 1_700_000_002},
		{t0.Add(time.Nanosecond), 0, 1_700_000_000}, // microseconds, like the stores
	} {
		if got := resetEpoch(c.now, c.d); got != c.want {
			t.Errorf("resetEpoch(%v, %v) = %d, want %d", c.now, c.d, got, c.want)
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote\back`, "ctl\x00\x1f\n\t", "ünïcødé ✓", "bad\xff\xfeutf8", "\u2028"} {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("%q: %s is not JSON: %v", s, b, err)
			continue
		}
		want, _ := json.Marshal(s) // encoding/json replaces invalid UTF-8 the same way
		var w string
		json.Unmarshal(want, &w)
		if got != w {
			t.Errorf("%q: got %q, want %q", s, got, w)
		}
	}
}
