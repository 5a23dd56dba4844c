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
	fleet, err := rules.Fleet(ctx, client, rf.key)
	if err != nil {
		return fs.fail(rf.failed(err))
	}
	if stored == "" {
		fmt.Fprintf(stdout, "stored: no rules at %s\n", rf.key)
	} else {
		fmt.Fprintf(stdout, "stored: version %s at %s\n", stored, rf.key)
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
