package simulate_test

import (
	"slices"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/cmd/ratelimit/internal/simulate"
)

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestMostWithin(t *testing.T) {
	for _, tc := range []struct {
		times []time.Duration
		d     time.Duration
		want  int
	}{
		{nil, time.Second, 0},
		{ms(0), time.Second, 1},
		{ms(0, 999), time.Second, 2},
		{ms(0, 1000), time.Second, 1}, // half-open: [0, 1000) does not hold 1000
		{ms(0, 500, 500, 1400, 1499), time.Second, 4},
		{ms(900, 910, 1000, 1090, 1900, 1905), time.Second, 5}, // [906ms, 1906ms)
		{ms(5, 5, 5), time.Millisecond, 3},
	} {
		if got := simulate.MostWithin(tc.times, tc.d); got != tc.want {
			t.Errorf("MostWithin(%v, %v) = %d, want %d", tc.times, tc.d, got, tc.want)
		}
	}
}

func TestPerBucket(t *testing.T) {
	for _, tc := range []struct {
		times  []time.Duration
		length time.Duration
		want   []int
	}{
		{nil, 300 * time.Millisecond, []int{0, 0, 0}},
		{ms(0, 99, 100, 250), 300 * time.Millisecond, []int{2, 1, 1}},
		{ms(0, 300, 350), 300 * time.Millisecond, []int{1, 0, 0}}, // after the end: not drawn
		{ms(0, 240), 250 * time.Millisecond, []int{1, 0, 1}},      // a last, partial bucket
	} {
		if got := simulate.PerBucket(tc.times, 100*time.Millisecond, tc.length); !slices.Equal(got, tc.want) {
			t.Errorf("PerBucket(%v, 100ms, %v) = %v, want %v", tc.times, tc.length, got, tc.want)
		}
	}
}

func TestReleasedAtIsSorted(t *testing.T) {
	tr := simulate.Trace{Requests: []simulate.Request{
		{At: 0, Allowed: true, Delay: 300 * time.Millisecond},
		{At: 100 * time.Millisecond, Allowed: false},
		{At: 150 * time.Millisecond, Allowed: true},
	}}
	if got, want := tr.ReleasedAt(), ms(150, 300); !slices.Equal(got, want) {
		t.Errorf("ReleasedAt() = %v, want %v", got, want)
	}
	if got, want := tr.AdmittedAt(), ms(0, 150); !slices.Equal(got, want) {
		t.Errorf("AdmittedAt() = %v, want %v", got, want)
	}
	if tr.Admitted() != 2 || tr.Refused() != 1 {
		t.Errorf("Admitted, Refused = %d, %d; want 2, 1", tr.Admitted(), tr.Refused())
	}
}
