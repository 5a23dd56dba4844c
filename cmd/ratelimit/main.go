// Command ratelimit is the toolbox of the ratelimit library. It has one subcommand so far:
//
//	ratelimit simulate [-out dir]   draw every algorithm under the same traffic, as SVG charts
//
// Run it from the repository with go run:
//
//	go run ./cmd/ratelimit simulate -out docs/pictures
package main

import (
	"fmt"
	"io"
	"os"
)

// command is one subcommand: run gets the arguments after its name and returns the exit code.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands, in the order the usage shows them.
var commands = []command{
	{"simulate", "drive every algorithm with the same traffic on a fake clock and draw SVG charts", simulateCmd},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to the subcommand named by args[0] and returns the exit code: 2 for a usage
// error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "ratelimit: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ratelimit <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "ratelimit <command> -h" for a command's flags.`)
}
