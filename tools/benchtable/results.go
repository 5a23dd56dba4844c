package main

import (
	"fmt"
	"strings"

	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

// writeResults writes make bench's section of the results file at path (loadgen.WriteSection):
// the run described, then every row of the table as a Markdown table per section of the
// table, each figure with its key, floor, ratio and target. The documents cite their measured
// figures from this file (TestDocFiguresAreInResults in the root module), so a figure cannot
// be in a document that no run produced.
func writeResults(path string, run loadgen.Run, f figures) error {
	var b strings.Builder
	for _, s := range table {
		fmt.Fprintf(&b, "### %s\n\n| figure | key | measured | floor | ratio | target | result |\n|---|---|---|---|---|---|---|\n", s.heading)
		for _, r := range s.rows {
			c := cellsOf(r, f)
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %s |\n", r.label, r.key, c.measured, c.floor, c.ratio, c.target, c.result)
		}
		b.WriteString("\n")
	}
	if note := failedOpenNote(f); note != "" {
		fmt.Fprintf(&b, "%s\n\n", note)
	}
	return loadgen.WriteSection(path, "bench", "make bench (tools/benchtable)", run, b.String())
}
