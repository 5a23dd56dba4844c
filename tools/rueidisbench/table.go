package main

import (
	"fmt"
	"io"
	"slices"
)

// The bar for shipping the rueidis store: this much more throughput than the go-redis
// store at 64 goroutines, with a p50 no worse.
const (
	winRate = 1.15
	winP50  = 1.00
)

// median returns the median of the rounds' values of v.
func median(rounds []figures, v func(figures) float64) float64 {
	xs := make([]float64, len(rounds))
	for i, f := range rounds {
		xs[i] = v(f)
	}
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

// printTable writes each subject's medians and the medians of its per-round ratios to the
// floor, then the rueidis store against the go-redis store.
func printTable(out io.Writer, rounds []figures, goroutines int) {
	fmt.Fprintf(out, "%-34s %14s %7s %12s %9s %7s %8s %7s\n", "subject",
		fmt.Sprintf("checks/s @%d", goroutines), "ratio", "Redis µs/call", "p50 µs", "ratio", "allocs", "ratio")
	for _, name := range order {
		fig := func(f figures) figure { return f[name] }
		floor := func(f figures) figure { return f[floorName] }
		fmt.Fprintf(out, "%-34s %14.0f %6.2f× %12.2f %9.1f %6.2f× %8.1f %6.2f×\n", name,
			median(rounds, func(f figures) float64 { return fig(f).rate }),
			median(rounds, func(f figures) float64 { return fig(f).rate / floor(f).rate }),
			median(rounds, func(f figures) float64 { return fig(f).server }),
			median(rounds, func(f figures) float64 { return fig(f).p50 }),
			median(rounds, func(f figures) float64 { return fig(f).p50 / floor(f).p50 }),
			median(rounds, func(f figures) float64 { return fig(f).allocs }),
			median(rounds, func(f figures) float64 { return fig(f).allocs / floor(f).allocs }))
	}
	fmt.Fprintln(out)
	for _, name := range []string{rueidisFcallName, rueidisStoreName} {
		rate := median(rounds, func(f figures) float64 { return f[name].rate / f[goredisStoreName].rate })
		p50 := median(rounds, func(f figures) float64 { return f[name].p50 / f[goredisStoreName].p50 })
		verdict := "does not clearly beat"
		if rate >= winRate && p50 <= winP50 {
			verdict = "clearly beats"
		}
		fmt.Fprintf(out, "%s / go-redis store: checks/s %.2f×, p50 %.2f× (bar: ≥ %.2f× and ≤ %.2f×): %s the go-redis store\n",
			name, rate, p50, winRate, winP50, verdict)
	}
}
