package ratelimit

import (
	"errors"
	"math"
	"testing"
	"time"
)

// A reply of check.lua whose durations no time.Duration can hold (a Redis that answers what
// the script never would: another program behind the address, corrupted memory) is refused
// with errBadReply: converted, it wrapped to a negative or small duration (a Retry-After of
// 0, a denial cached for no time) with no error. algorithms.Never (-1) and durations up to the longest
// Duration stay valid.
func TestDecodeCheckRefusesDurationsOutOfRange(t *testing.T) {
	row := func(v [6]int64) []int64 { return append(v[:], 1_700_000_000_000_000) }
	longest := int64(math.MaxInt64 / int64(time.Microsecond))
	for _, c := range []struct {
		name  string
		reply []int64
		ok    bool
	}{
		{"a denial", row([6]int64{0, 0, 1_000_000, 1_000_000, 0, 1_000_000}), true},
		{"never", row([6]int64{0, 0, 0, -1, 0, 0}), true},
		{"the longest duration", row([6]int64{0, 0, longest, longest, longest, longest}), true},
		{"a Retry-After beyond it", row([6]int64{0, 0, 0, longest + 1, 0, 0}), false},
		{"a reset beyond it", row([6]int64{1, 5, 1 << 62, 0, 0, 0}), false},
		{"a delay beyond it", row([6]int64{1, 5, 0, 0, math.MaxInt64, 0}), false},
		{"a next beyond it", row([6]int64{1, 5, 0, 0, 0, -(1 << 62)}), false},
	} {
		out := make([]PolicyResult, 1)
		_, err := decodeCheck(c.reply, out)
		if c.ok != (err == nil) || err != nil && !errors.Is(err, errBadReply) {
			t.Errorf("%s: %v; want ok %v (else errBadReply)", c.name, err, c.ok)
		}
	}
}
