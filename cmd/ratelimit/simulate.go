package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/a7d3e0dd/ratelimit/internal/simulate"
)

// simulateCmd runs every scenario through every algorithm over the memory store, writes one SVG
// chart per scenario into -out, and prints the figures of each run.
func simulateCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ratelimit simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "docs/pictures", "the directory to write the SVG charts into")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ratelimit simulate [-out dir]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Drives every algorithm with the same traffic (a steady stream, a burst across a window")
		fmt.Fprintln(stderr, "boundary, a sustained 3× overload) through the memory store on a fake clock, writes one")
		fmt.Fprintln(stderr, "SVG chart per scenario, and prints what each algorithm admitted.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ratelimit simulate: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}
	pics, err := simulate.Pictures(context.Background(), simulate.Memory)
	if err == nil {
		err = simulate.Write(*out, pics)
	}
	if err != nil {
		fmt.Fprintln(stderr, "ratelimit simulate:", err)
		return 1
	}
	for _, p := range pics {
		fmt.Fprintf(stdout, "wrote %s\n", p.File)
	}
	fmt.Fprintln(stdout)
	if err := simulate.Summary(stdout, pics); err != nil {
		fmt.Fprintln(stderr, "ratelimit simulate:", err)
		return 1
	}
	return 0
}
