package main

import (
	"testing"
	"time"
)

// spanAllows is GCRA 100/s burst 100 over the load's span: 200 from the second's boundary,
// less for a load that started late, never below the burst.
func TestSpanAllows(t *testing.T) {
	end := time.Unix(1_700_000_001, 0)
	for _, c := range []struct {
		late time.Duration
		want float64
	}{{0, 200}, {time.Microsecond, 200}, {10 * time.Millisecond, 199}, {35 * time.Millisecond, 197}, {time.Second, 100}} {
		if got := spanAllows(end.Add(-time.Second+c.late), end); got != c.want {
			t.Errorf("a load %v late: %v, want %v", c.late, got, c.want)
		}
	}
}

// worstOf takes the fewest admitted, the most over what each round's span allowed, and the
// round with the lowest ratio to its span: a late round that admitted less is not the worst
// when its span allowed as much less.
func TestWorstOf(t *testing.T) {
	rounds := []figures{
		{"hot.gcra": 199, "hot.gcra.span": 200, "hot.nocache": 200},
		{"hot.gcra": 195, "hot.gcra.span": 195, "hot.nocache": 198}, // late, all it could
		{"hot.gcra": 197, "hot.gcra.span": 200, "hot.nocache": 199},
		{"hot.gcra": 150, "hot.gcra.span": 149, "hot.nocache": 199}, // one over its span
	}
	med := figures{}
	worstOf(rounds, med)
	want := figures{"hot.worst": 150, "hot.nocache.worst": 198, "hot.over": 1, "hot.worst.span": 197, "hot.worst.spanfloor": 200}
	for k, v := range want {
		if med[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, med[k], v, med)
		}
	}
}
