// Command ratelimit is the operator's toolbox of the ratelimit library: it validates rules
// files, pushes them to Redis for a whole fleet, shows the version in force, and inspects or
// resets what one client has used.
//
//	ratelimit validate FILE...                           check rules files
//	ratelimit push -redis URL FILE                       validate a rules file, store it in Redis, wait for the fleet
//	ratelimit version -redis URL                         the rules stored in Redis: their version, file, time
//	ratelimit --version                                  the version of the command itself (or -version)
//	ratelimit status -redis URL                          the stored version and what each instance runs
//	ratelimit inspect -redis URL -rule NAME IDENTITY     what an identity has left under a rule
//	ratelimit inspect -redis URL -policy SPEC IDENTITY   ... under a middleware's limits
//	ratelimit reset -redis URL -rule NAME IDENTITY       forget what an identity has used under a rule
//	ratelimit simulate [-out dir]                        draw every algorithm under the same traffic
//
// Install it with
//
//	go install github.com/a7d3e0dd/ratelimit/cmd/ratelimit@latest
//
// or run it from a checkout of the repository, such as go run ./cmd/ratelimit simulate.
// Every command has -h, which "ratelimit help COMMAND" prints too. The exit code is 0 on success, 1 on a failure, 2 on a usage error.
//
// # Redis
//
// -redis is a URL, redis://[user:password@]host:port[/db] or rediss:// for TLS, which go-redis
// parses (redis.ParseURL), or host:port. Several comma-separated host:port, or a URL with
// addr= parameters (redis.ParseClusterURL), are the seed nodes of a Redis Cluster; -cluster
// makes one address a Cluster's. With -sentinel-master NAME, or a URL with master_name=NAME
// (redis.ParseFailoverURL), -redis names the Sentinels that watch the master NAME: the URL's
// user and password are then the Sentinels', its username= and password= parameters the
// master's. -redis-user, -password (or else the environment variable REDIS_PASSWORD), -db,
// -sentinel-user, -sentinel-password (or else REDIS_SENTINEL_PASSWORD) and -tls fill what a
// URL leaves out; a flag that says other than the URL is a usage error. -tls-ca FILE verifies
// the server with a CA of your own, -tls-insecure not at all. The rules live at -key,
// rules.DefaultRedisKey ("rl:rules") by default, in the format package rules documents (see
// rules.Push). -timeout (10s) bounds the whole command: every dial, read, write and wait for a
// connection, and nothing is retried. Every error names the Redis it was talking to, without
// its password.
//
// # Identities
//
// inspect and reset take the identity as the limiter sees it, the key that the rule's key
// made, such as hdr:x-api-key:abc, or for a key of several parts, joined by ratelimit.KeyJoin,
// "12:ip:192.0.2.1|17:route:/search/{q}". Rather than write that, give the parts with -ip,
// -route, -method, -api-key, -header "Name: value" and -user, and the command makes the
// identity with the rule's own key function. "ratelimit inspect -h" shows what each part of a
// key makes. A middleware's limits have no rule: -policy, once for each policy of the list as
// the application's ratelimit.Policy has it, and -keyed-by (ip by default) make one.
//
// # Rules keyed by user
//
// A rule keyed by "user" names a Go value in the application (rules.WithUserKey), which a file
// cannot. The command validates and pushes such files all the same, with a placeholder of its
// own; the identity is user:<id> whatever the application's key.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/a7d3e0dd/ratelimit/rules"
)

// command is one subcommand: run gets the arguments after its name and returns the exit code.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands, in the order the usage shows them.
var commands = []command{
	{"validate", "check rules files and print their versions, or every problem", validateCmd},
	{"push", "validate a rules file and store it in Redis, for every instance to load", pushCmd},
	{"version", "show the rules stored in Redis: their version, file name, when pushed (the tool's own: --version)", versionCmd},
	{"status", "show the stored version and what every instance watching it runs or refused", statusCmd},
	{"inspect", "show what an identity has left under a rule's policies", inspectCmd},
	{"reset", "forget what an identity has used under a rule's policies", resetCmd},
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
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "help":
		return help(args[1:], stdout, stderr)
	case "-version", "--version":
		toolVersion(stdout)
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

// help prints the usage, or with the name of a command, that command's help (its -h).
func help(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stdout)
		return 0
	case len(args) > 1:
		fmt.Fprintf(stderr, "ratelimit help: give one command, not %q (see ratelimit help)\n", args)
		return 2
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run([]string{"-h"}, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "ratelimit help: unknown command %q (see ratelimit help)\n", args[0])
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ratelimit <command> [flags]")
	fmt.Fprintln(w, "       ratelimit --version")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "ratelimit help <command>" or "ratelimit <command> -h" for a command's flags;`)
	fmt.Fprintln(w, `"ratelimit --version" (or -version) prints the tool's own version, "ratelimit version" that`)
	fmt.Fprintln(w, `of the rules stored in Redis.`)
}

// flags are the flags of a subcommand, with its help.
type flags struct {
	*flag.FlagSet
	name, synopsis, about string
	stdout, stderr        io.Writer
}

// given reports whether the flag name was set on the command line (not left at its default).
func (fs *flags) given(name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// newFlags returns the flags of the subcommand name, whose help shows the synopsis (what
// follows the name) and about, a text of whole lines, before the flags.
func newFlags(name, synopsis, about string, stdout, stderr io.Writer) *flags {
	fs := flag.NewFlagSet("ratelimit "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the errors are reported by parse, the help by help
	fs.Usage = func() {}
	return &flags{FlagSet: fs, name: name, synopsis: synopsis, about: about, stdout: stdout, stderr: stderr}
}

// help prints the command's help on stdout.
func (f *flags) help() {
	fmt.Fprintf(f.stdout, "usage: ratelimit %s %s\n\n%s\nflags:\n", f.name, f.synopsis, f.about)
	f.SetOutput(f.stdout)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

// parse parses the command's arguments, flags before, between or after the others (all after
// "--" are others), and returns the others, of which there must be min to max (max < 0: any
// number); what names them in errors. When the command is not to run, ok is false and code
// its exit code: 0 after -h, which prints the help, 2 for a usage error, which it reports.
func (f *flags) parse(args []string, what string, min, max int) (others []string, code int, ok bool) {
	for {
		if err := f.Parse(args); errors.Is(err, flag.ErrHelp) {
			f.help()
			return nil, 0, false
		} else if err != nil {
			return nil, f.usageError("%v", err), false
		}
		rest := f.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			others = append(others, rest...)
			break
		}
		others, args = append(others, rest[0]), rest[1:]
	}
	switch {
	case len(others) > max && max >= 0:
		return nil, f.usageError("unexpected arguments %q", others[max:]), false
	case len(others) < min:
		return nil, f.usageError("missing %s", what), false
	}
	return others, 0, true
}

// usageError reports a usage error on one line and returns the exit code 2.
func (f *flags) usageError(format string, args ...any) int {
	fmt.Fprintf(f.stderr, "%s: %s (see ratelimit %s -h)\n", f.Name(), fmt.Sprintf(format, args...), f.name)
	return 2
}

// fail reports the error that ended the command and returns the exit code 1: the problems of
// a rules file one a line as they are ("file:line: field: message"), anything else after the
// command's name.
func (f *flags) fail(err error) int {
	if errs, ok := err.(rules.Errors); ok {
		fmt.Fprintln(f.stderr, errs.Error())
	} else {
		fmt.Fprintf(f.stderr, "%s: %v\n", f.Name(), err)
	}
	return 1
}

// plural returns n and noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
