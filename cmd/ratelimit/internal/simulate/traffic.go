package simulate

import "time"

// Scenario is one pattern of traffic from one client: the times its requests arrive.
type Scenario struct {
	// Name is the stem of the scenario's picture: "steady" draws docs/pictures/steady.svg.
	Name string
	// Title heads the picture.
	Title string
	// Traffic says in one line what arrives when.
	Traffic string
	// Length is the simulated time the picture shows.
	Length time.Duration
	// Arrivals are the times requests arrive, since the start, in order.
	Arrivals []time.Duration
}

// Scenarios returns the traffic every algorithm is driven with, one picture each.
func Scenarios() []Scenario {
	return []Scenario{Steady(), BoundaryBurst(), Overload()}
}

// Steady is a stream at exactly the limit: one request every Window/Limit, half an interval
// after each window starts, for four windows. A limiter that admitted Limit per Window
// exactly would admit every one.
func Steady() Scenario {
	interval := Window / Limit
	return Scenario{
		Name:     "steady",
		Title:    "A steady stream at the limit",
		Traffic:  "One request every 100 ms (10 per second), for 4 s.",
		Length:   4 * Window,
		Arrivals: every(interval/2, interval, 4*Limit),
	}
}

// BoundaryBurst is the fixed window's worst case, twice: Limit requests in the last tenth of
// a window and Limit more in the first tenth of the next, 10 ms apart, at the end of the first
// window and again at the end of the third.
func BoundaryBurst() Scenario {
	spacing := Window / (10 * Limit)
	var at []time.Duration
	for _, boundary := range []time.Duration{Window, 3 * Window} {
		at = append(at, every(boundary-Limit*spacing, spacing, 2*Limit)...)
	}
	return Scenario{
		Name:     "boundary-burst",
		Title:    "A burst across a window boundary",
		Traffic:  "20 requests 10 ms apart, from 100 ms before a window boundary to 100 ms after it, at 1 s and at 3 s.",
		Length:   4 * Window,
		Arrivals: at,
	}
}

// Overload is three times the limit for three windows, then nothing for one, so the
// picture shows both how each algorithm holds the limit and how it recovers.
func Overload() Scenario {
	n := 3 * 3 * Limit // 3× the limit, for 3 windows
	at := make([]time.Duration, n)
	for i := range at {
		at[i] = time.Duration(int64(i) * int64(Window) / int64(3*Limit)).Truncate(time.Microsecond)
	}
	return Scenario{
		Name:     "overload",
		Title:    "A sustained 3× overload",
		Traffic:  "30 requests per second (one every 33⅓ ms) for 3 s, then none.",
		Length:   4 * Window,
		Arrivals: at,
	}
}

// every returns n times, step apart, from start on.
func every(start, step time.Duration, n int) []time.Duration {
	at := make([]time.Duration, n)
	for i := range at {
		at[i] = start + time.Duration(i)*step
	}
	return at
}
