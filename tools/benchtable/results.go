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
	body := markdown(table, f)
	if note := failedOpenNote(f); note != "" {
		body += note + "\n\n"
	}
	return loadgen.WriteSection(path, "bench", "make bench (tools/benchtable)", run, body)
}

// apartTable is a table with a section of its own in the results file, which every run
// writes and `-only` with its name takes and writes alone, measuring nothing else.
type apartTable struct {
	name    string // of -only
	section string // of the results file
	heading string // of that section
	table   []section
}

// apart are those tables: issue 36's target (calendarTable), issue 39's tail and hot key
// (tailTable) and issue 35's (holdsTable), whose
// section is not "holds": that one is TestHoldsResults's, the holds picture's figures.
var apart = []apartTable{
	{onlyCalendar, "calendar", "make bench (tools/benchtable): a calendar policy beside a fixed window (issue 36)", calendarTable},
	{onlyHolds, "bench-holds", "make bench (tools/benchtable): Reserve and Settle beside a check (issue 35)", holdsTable},
	{onlyTail, "bench-tail", "make bench (tools/benchtable): the HTTP tail and one hot identity (issue 39)", tailTable},
}

// writeApartResults writes the section of a to the results file at path, apart from the rest,
// so that `-only` with its name replaces it alone.
func writeApartResults(path string, a apartTable, run loadgen.Run, f figures) error {
	return loadgen.WriteSection(path, a.section, a.heading, run, markdown(a.table, f))
}

// markdown is the sections t of the table of the figures f as Markdown tables.
func markdown(t []section, f figures) string {
	var b strings.Builder
	for _, s := range t {
		fmt.Fprintf(&b, "### %s\n\n| figure | key | measured | floor | ratio | target | result |\n|---|---|---|---|---|---|---|\n", s.heading)
		for _, r := range s.rows {
			c := cellsOf(r, f)
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %s |\n", r.label, r.key, c.measured, c.floor, c.ratio, c.target, c.result)
		}
		b.WriteString("\n")
	}
	return b.String()
}
