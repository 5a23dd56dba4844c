package simulate

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
)

// Picture is one generated chart.
type Picture struct {
	// File is its file name in docs/pictures, e.g. "steady.svg".
	File string
	// SVG is the document.
	SVG []byte
	// Traces are the runs it draws.
	Traces []Trace
}

// Pictures runs every scenario through every algorithm over stores from newStore and draws
// one chart per scenario, in the order of [Scenarios].
func Pictures(ctx context.Context, newStore NewStore) ([]Picture, error) {
	var pics []Picture
	for _, sc := range Scenarios() {
		traces, err := RunAll(ctx, sc, newStore)
		if err != nil {
			return nil, err
		}
		pics = append(pics, Picture{File: sc.Name + ".svg", SVG: Chart(sc, traces), Traces: traces})
	}
	return pics, nil
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
// Window.
func Summary(w io.Writer, pics []Picture) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "picture\talgorithm\tadmitted\trefused\tmost admitted in any %s\tmost released in any %[1]s\n", duration(Window))
	for _, p := range pics {
		for _, tr := range p.Traces {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", p.File, GoName(tr.Algorithm), tr.Admitted(), tr.Refused(),
				MostWithin(tr.AdmittedAt(), Window), MostWithin(tr.ReleasedAt(), Window))
		}
	}
	return tw.Flush()
}
