package main

import (
	"context"
	"fmt"
	"io"

	"github.com/a7d3e0dd/ratelimit/cmd/ratelimit/internal/simulate"
)

// simulateCmd runs every scenario through every algorithm, every calendar scenario through its
// calendar policy, and the holds scenario charged after the fact and reserved then settled, over
// the memory store, writes one SVG chart per scenario into -out, and prints the figures of each
// run.
func simulateCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("simulate", "[-out dir]", `Drives every algorithm with the same traffic (a steady stream, a burst across a window
boundary, a sustained 3× overload) through the memory store on a fake clock, and two
calendar quotas (a day across a clock change, a billing month anchored on the 31st), and ten
requests whose cost is known after the response (charged after the fact, or reserved then
settled), writes one SVG chart per scenario, and prints what each admitted.
`, stdout, stderr)
	out := fs.String("out", "docs/pictures", "the directory to write the SVG charts into")
	if _, code, ok := fs.parse(args, "", 0, 0); !ok {
		return code
	}
	pics, err := simulate.Pictures(context.Background(), simulate.Memory)
	if err == nil {
		err = simulate.Write(*out, pics)
	}
	if err != nil {
		return fs.fail(err)
	}
	for _, p := range pics {
		fmt.Fprintf(stdout, "wrote %s\n", p.File)
	}
	fmt.Fprintln(stdout)
	if err := simulate.Summary(stdout, pics); err != nil {
		return fs.fail(err)
	}
	return 0
}
