package main

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/a7d3e0dd/ratelimit/rules"
)

// statusCmd shows the stored version of the rules and what every live instance runs.
func statusCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("status", redisSynopsis, `Shows the version of the rules stored in Redis at -key, and every instance watching it
(rules.Engine.WatchRedis): the version it runs, the version it refused and why, and when it
last reported. An instance reports every heartbeat (10 s by default); one that has not
reported for three is gone and not shown.

Instances of another kind that report to the same fleet (ratelimit-rls, kind rls, with
-redis) are listed after them, with the version of their own configuration, when they loaded
it, their health and the version of their files they refused, with why; they do not run the
stored rules, and the exit status is the engines'.

Exit status: 0 when every live instance runs the stored version; 1 when one refused it;
3 when one runs another version (it has not caught up yet), none watches the key, or no
rules are stored there.
`, stdout, stderr)
	rf := addRedisFlags(fs.FlagSet)
	if _, code, ok := fs.parse(args, "", 0, 0); !ok {
		return code
	}
	if err := rf.check(); err != nil {
		return fs.usageError("%v", err)
	}
	client, ctx, cancel := rf.client()
	defer cancel()
	defer client.Close()
	stored, err := rules.StoredVersion(ctx, client, rf.key)
	if err != nil && !errors.Is(err, rules.ErrNoRules) {
		return fs.fail(rf.failed(err))
	}
	all, err := rules.Fleet(ctx, client, rf.key)
	if err != nil {
		return fs.fail(rf.failed(err))
	}
	fleet, others := splitFleet(all)
	if stored == "" {
		fmt.Fprintf(stdout, "stored: no rules at %s\n", rf.key)
	} else {
		fmt.Fprintf(stdout, "stored: version %s at %s\n", stored, rf.key)
	}
	if len(others) > 0 {
		defer printOthers(stdout, others) // after the engines' report, which the exit status follows
	}
	if len(fleet) == 0 {
		fmt.Fprintln(stdout, "no instance is watching")
		fmt.Fprintf(stderr, "ratelimit status: no instance is watching %s\n", rf.key)
		return exitWaiting
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tRUNNING\tREFUSED\tSEEN\tREASON")
	for _, in := range fleet {
		refused := in.Refused
		if refused == "" {
			refused = "-"
		}
		running := in.Running
		if in.Empty {
			running += " (no rules: limits nothing)" // a document of allow_empty: true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s ago\t%s\n", in.Name, running, refused, in.Age.Round(time.Second), in.Reason)
	}
	tw.Flush()
	if stored == "" {
		// Nothing pushed (or the key was lost with a Redis that kept no data): every instance
		// runs rules of its own, its default or last known good ones. None refused anything.
		fmt.Fprintf(stdout, "no rules stored: %d instances run rules of their own until a push\n", len(fleet))
		fmt.Fprintf(stderr, "ratelimit status: no rules stored at %s; %d instances run rules of their own\n", rf.key, len(fleet))
		return exitWaiting
	}
	applied, refused, pending := fleetReport(fleet, stored, time.Time{})
	fmt.Fprintf(stdout, "%d of %d instances run the stored version\n", len(applied), len(fleet))
	switch {
	case len(refused) > 0:
		fmt.Fprintf(stderr, "ratelimit status: %d of %d instances refused version %s\n", len(refused), len(fleet), stored)
		return exitRefused
	case len(pending) > 0:
		fmt.Fprintf(stderr, "ratelimit status: %d of %d instances run another version than %s\n", len(pending), len(fleet), stored)
		return exitWaiting
	}
	return 0
}

// splitFleet separates the rules engines (kind "") from the instances of other kinds
// (rules.RecordInstance: ratelimit-rls), which do not run the stored rules.
func splitFleet(all []rules.Instance) (engines, others []rules.Instance) {
	for _, in := range all {
		if in.Kind == "" {
			engines = append(engines, in)
		} else {
			others = append(others, in)
		}
	}
	return engines, others
}

// printOthers lists the instances of other kinds: their own configurations' versions, when
// they loaded them, their health, and the version they last refused, with why.
func printOthers(stdout io.Writer, others []rules.Instance) {
	fmt.Fprintf(stdout, "%d instances of other kinds, on configurations of their own:\n", len(others))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tKIND\tRUNNING\tLOADED\tHEALTH\tREFUSED\tSEEN\tREASON")
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, in := range others {
		loaded := "-"
		if !in.Loaded.IsZero() {
			loaded = in.Loaded.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s ago\t%s\n", in.Name, in.Kind, in.Running, loaded, dash(in.Health), dash(in.Refused),
			in.Age.Round(time.Second), in.Reason)
	}
	tw.Flush()
}
