package simulate

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Picture is one generated chart.
type Picture struct {
	// File is its file name in docs/pictures, e.g. "steady.svg".
	File string
	// SVG is the document.
	SVG []byte
	// Traces are the runs it draws: one per algorithm, for the pictures of the algorithms.
	Traces []Trace
	// Calendar is the run a calendar picture draws, nil for the others.
	Calendar *CalendarTrace
	// Holds are the runs the holds picture draws, one per [HoldsMode].
	Holds []HoldsTrace
}

// Pictures runs every scenario through every algorithm over stores from newStore and draws
// one chart per scenario, in the order of [Scenarios], then every calendar scenario through
// its policy, in the order of [CalendarScenarios], then the [Holds] scenario.
func Pictures(ctx context.Context, newStore NewStore) ([]Picture, error) {
	var pics []Picture
	for _, sc := range Scenarios() {
		traces, err := RunAll(ctx, sc, newStore)
		if err != nil {
			return nil, err
		}
		pics = append(pics, Picture{File: sc.Name + ".svg", SVG: Chart(sc, traces), Traces: traces})
	}
	cal, err := CalendarScenarios()
	if err != nil {
		return nil, err
	}
	for _, sc := range cal {
		tr, err := RunCalendar(ctx, sc, newStore)
		if err != nil {
			return nil, err
		}
		pics = append(pics, Picture{File: sc.Name + ".svg", SVG: CalendarChart(sc, tr), Calendar: &tr})
	}
	holds, err := HoldsPicture(ctx, Holds(), newStore)
	if err != nil {
		return nil, err
	}
	return append(pics, holds), nil
}

// HoldsPicture runs sc in every [HoldsMode], each over a store of its own, and draws them.
func HoldsPicture(ctx context.Context, sc HoldsScenario, newStore NewStore) (Picture, error) {
	var traces []HoldsTrace
	for _, mode := range []HoldsMode{ChargedAfter, Held} {
		tr, err := RunHolds(ctx, sc, mode, newStore)
		if err != nil {
			return Picture{}, err
		}
		traces = append(traces, tr)
	}
	return Picture{File: sc.Name + ".svg", SVG: HoldsChart(sc, traces), Holds: traces}, nil
}

// Write writes every picture into dir, which it makes if need be.
func Write(dir string, pics []Picture) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, p := range pics {
		if err := os.WriteFile(filepath.Join(dir, p.File), p.SVG, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Summary writes the figures of every picture as a table: per scenario and algorithm, the
// requests admitted and refused, and the most admitted (and, when shaping, released) in any
// Window; then, for each calendar picture, the requests admitted and refused and how many
// were admitted in each period; then the comparison of the holds picture's runs
// ([HoldsResults]).
func Summary(w io.Writer, pics []Picture) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "picture\talgorithm\tadmitted\trefused\tmost admitted in any %s\tmost released in any %[1]s\n", duration(Window))
	for _, p := range pics {
		for _, tr := range p.Traces {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", p.File, GoName(tr.Algorithm), tr.Admitted(), tr.Refused(),
				MostWithin(tr.AdmittedAt(), Window), MostWithin(tr.ReleasedAt(), Window))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	first := true
	for _, p := range pics {
		if p.Calendar == nil {
			continue
		}
		if first {
			fmt.Fprintf(tw, "\npicture\tadmitted\trefused\tadmitted in each period\n")
			first = false
		}
		var per []string
		for _, n := range p.Calendar.AdmittedIn() {
			per = append(per, strconv.Itoa(n))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", p.File, p.Calendar.Admitted(), p.Calendar.Refused(), strings.Join(per, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range pics {
		if p.Holds != nil {
			fmt.Fprintf(w, "\n%s: %s", p.File, HoldsResults(Holds(), p.Holds))
		}
	}
	return nil
}
