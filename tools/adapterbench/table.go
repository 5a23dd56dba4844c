package main

import (
	"fmt"
	"strings"
)

// targetRatio is issue 39's: the adapter's p99 and p99.9 at most 1.1× the floor's, their medians
// over the same rounds.
const targetRatio = 1.1

// markdown is the table of every framework measured (only: one alone), in the results file's
// columns: figure, key, measured, floor, ratio, target, result. A framework's rows are its
// requests per second and its latencies at p50, p99 and p99.9: the bare handler's, the
// floor's, and the adapter's against the floor's (p99 and p99.9 with the target) and, for
// p99, against the bare handler's.
func markdown(f figures, only string) string {
	var b strings.Builder
	for _, fw := range frameworks {
		if only != "" && fw.name != only {
			continue
		}
		fmt.Fprintf(&b, "### 39 %s: end to end on loopback, one client address, a policy that never denies it\n\n", fw.label)
		b.WriteString("| figure | key | measured | floor | ratio | target | result |\n|---|---|---|---|---|---|---|\n")
		row := func(label, what, route, floorRoute string, goal bool) {
			k, unit := key(fw.name, what, route), "µs"
			if what == "rate" {
				unit = "/s"
			}
			v, found := f[k]
			if !found {
				return
			}
			fmt.Fprintf(&b, "| %s | `%s` | %s |", label, k, value(v, unit))
			fl, hasFloor := f[key(fw.name, what, floorRoute)]
			if floorRoute == "" || !hasFloor || fl == 0 {
				b.WriteString("  |  |  |  |\n")
				return
			}
			ratio := v / fl
			fmt.Fprintf(&b, " %s | %.2f× |", value(fl, unit), ratio)
			if !goal {
				b.WriteString("  |  |\n")
				return
			}
			result := "MISS"
			if ratio <= targetRatio {
				result = "PASS"
			}
			fmt.Fprintf(&b, " ≤ %.2f× | %s |\n", targetRatio, result)
		}
		row("requests/s: bare handler", "rate", "bare", "", false)
		row("requests/s: trivial EVALSHA, then the handler (floor)", "rate", "floor", "", false)
		row("requests/s: the adapter, 1 policy", "rate", "ours", "floor", false)
		for _, p := range []struct{ what, label string }{{"p50", "p50"}, {"p99", "p99"}, {"p999", "p99.9"}} {
			row(p.label+": bare handler", p.what, "bare", "", false)
			row(p.label+": trivial EVALSHA, then the handler (floor)", p.what, "floor", "", false)
			row(p.label+": the adapter, 1 policy", p.what, "ours", "floor", p.what != "p50")
			if p.what == "p99" {
				row(p.label+": the adapter, against the bare handler", p.what, "ours", "bare", false)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// value formats a figure in its unit.
func value(v float64, unit string) string {
	if unit == "/s" {
		return fmt.Sprintf("%.1fk/s", v/1000)
	}
	return fmt.Sprintf("%.1f µs", v)
}
