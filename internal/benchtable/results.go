package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// runInfo describes a run for the results file: when, on what, how, and under what load.
type runInfo struct {
	when    time.Time
	machine string // machine()
	how     string // the rounds and the load generated, and how long the run took
	load    string // the machine's load average at the start and the end, and -note
}

// writeResults writes the results file at path: the run's description and every row of the
// table as a Markdown table per section, each figure with its key, floor, ratio and target.
// The documents cite their measured figures from this file (TestDocFiguresAreInResults in the
// root module), so a figure cannot be in a document that no run produced.
func writeResults(path string, info runInfo, f figures) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Performance results\n\n")
	fmt.Fprintf(&b, "Written by `make bench` (`go run ./internal/benchtable -out %s`) on %s. Do not edit it:\n", path, info.when.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "run `make bench` again. README.md, ARCHITECTURE.md and CHANGELOG.md take their measured figures\n")
	fmt.Fprintf(&b, "from here, and `TestDocFiguresAreInResults` fails when a figure they mark is not in this file.\n\n")
	fmt.Fprintf(&b, "- %s\n- run: %s\n- load: %s\n\n", info.machine, info.how, info.load)
	fmt.Fprintf(&b, "Each timed figure is the median of the rounds, each taken right after its floor. The ratios to\n")
	fmt.Fprintf(&b, "a floor measured in the same run are what to compare across runs and machines; the absolute\n")
	fmt.Fprintf(&b, "figures move with the machine's load.\n")
	for _, s := range table {
		fmt.Fprintf(&b, "\n## %s\n\n| figure | key | measured | floor | ratio | target | result |\n|---|---|---|---|---|---|---|\n", s.heading)
		for _, r := range s.rows {
			c := cellsOf(r, f)
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %s |\n", r.label, r.key, c.measured, c.floor, c.ratio, c.target, c.result)
		}
	}
	if note := failedOpenNote(f); note != "" {
		fmt.Fprintf(&b, "\n%s\n", note)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// loadAverage returns the machine's 1-minute load average, from /proc/loadavg where there is
// one.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b) + " ?")[0]
}
