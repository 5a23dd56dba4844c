package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/rules"
)

// Exit codes of push and status beyond 0, 1 and 2.
const (
	exitRefused = 1 // an instance refused the version
	exitWaiting = 3 // not every live instance had answered when the wait ended, or none watches
)

// pushCmd validates a rules file and stores it in Redis with rules.PushWith, then waits for
// the fleet to apply it.
func pushCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("push", redisSynopsis+" [-dry-run] [-force] [-expect VERSION] [-wait 10s] FILE", `Validates the rules file as "ratelimit validate" does and, when it is valid, stores it in
Redis with rules.Push: the hash at -key is replaced whole and the new version published on
the channel of the same name, in one atomic step, for every instance to load. An invalid
file writes nothing. The file is stored under its base name, which picks its format and
names it in errors.

The file must say its version (version: "2026-12-01.1", or 7, at the top): versions are
ordered (segments between dots; in each, numbers by their value, so v10 follows v9), and a
file without one, whose version is a hash of its rules, is refused, -force or not. It
refuses, and writes nothing, when the version is not newer than the stored one (a silent
rollback; -force pushes it all the same, and every instance logs that it applied a forced
push), when the stored version is not -expect (someone pushed since you started), and when an
instance runs the version as read from Redis with other rules (it would never read them; a key
emptied lets any version through), -force or not; a file
without rules, which stops limiting everywhere, is invalid unless it says allow_empty: true.
-dry-run prints what would change, rule by rule, against the stored version, and the
refusals the push would meet; it writes nothing, and exits 1 when the push would be refused.

Then it waits, at most -wait, until every instance watching the key (rules.Engine.WatchRedis)
has applied the version or refused it, and reports, e.g. "applied on 47 of 50 instances;
refused on 3: api-7: ...". Exit status: 0 when every live instance applied it; 1 when one
refused it (or the push failed); 3 when the wait ended before every live instance answered,
or no instance watches the key.
`, stdout, stderr)
	rf := addRedisFlags(fs.FlagSet)
	var (
		dryRun, force bool
		expect        optionalString
		wait          time.Duration
	)
	fs.BoolVar(&dryRun, "dry-run", false, "print what would change against the stored version, rule by rule, and push nothing")
	fs.BoolVar(&force, "force", false, "push even a version that is not newer than the stored one (a rollback), or not the -expect one")
	fs.Var(&expect, "expect", "push only if the stored `version` is this one (\"\" for none stored): the version you started from")
	durationVar(fs.FlagSet, &wait, "wait", 10*time.Second, "how long to wait for the instances to apply or refuse the version, a `duration` such as 30s or 2m; 0 does not wait")
	files, code, ok := fs.parse(args, "FILE", 1, 1)
	if !ok {
		return code
	}
	if err := rf.check(); err != nil {
		return fs.usageError("%v", err)
	}
	if wait < 0 {
		return fs.usageError("-wait must be 0 or more")
	}
	data, _, err := readRules(files[0])
	if err != nil {
		return fs.fail(err)
	}
	client, ctx, cancel := rf.client()
	defer cancel()
	defer client.Close()
	name := filepath.Base(files[0])
	if dryRun {
		return dryRunPush(ctx, fs, rf, client, name, data, expect, force, stdout)
	}
	o := rules.PushOptions{Force: force}
	if expect.set {
		o.IfVersion = &expect.value
	}
	stored, err := rules.PushStored(ctx, client, rf.key, name, data, o, parseOptions...)
	switch {
	case errors.Is(err, rules.ErrNotNewer), errors.Is(err, rules.ErrVersionChanged), errors.Is(err, rules.ErrNoVersion):
		return fs.fail(err) // refused: the message says why, and which flag overrides
	case err != nil:
		return fs.fail(rf.failed(err))
	}
	fmt.Fprintf(stdout, "pushed %s to %s: version %s, %s\n", name, rf.key, stored.Version, ruleCount(stored.Set, "every instance that applies it limits nothing"))
	if _, err := rules.Fleet(ctx, client, rf.key); err != nil && !force { // the push went on without checking it
		fmt.Fprintf(stderr, "warning: the fleet could not be read (%v): the push was not checked against the versions instances run\n", err)
	}
	if wait <= 0 {
		return 0
	}
	return awaitFleet(rf, client, stored.Version, stored.PushedAt, wait, stdout, stderr)
}

// ignoring returns the names of the instances of the fleet that would not read a push of set
// (rules.Instance.IgnoresPushOf), joined; "" for none (or a fleet that cannot be read: the
// push itself says why).
func ignoring(ctx context.Context, client redis.UniversalClient, key string, set *rules.Set, force bool) string {
	fleet, _ := rules.Fleet(ctx, client, key)
	var names []string
	for _, in := range fleet {
		if in.IgnoresPushOf(set, force) {
			names = append(names, in.Name)
		}
	}
	return strings.Join(names, ", ")
}

// dryRunPush prints what pushing data would change against the stored version, and the
// refusals the push would meet (expect is -expect's, force -force's): exit 1 when there is one.
func dryRunPush(ctx context.Context, fs *flags, rf *redisFlags, client redis.UniversalClient, name string, data []byte, expect optionalString, force bool, stdout io.Writer) int {
	set, err := rules.Parse(name, data, parseOptions...)
	if err != nil {
		return fs.fail(err)
	}
	var stored *rules.Set
	from, storedVersion := "nothing stored", ""
	s, err := rules.Fetch(ctx, client, rf.key, parseOptions...)
	switch {
	case err == nil:
		stored, from, storedVersion = s.Set, "version "+s.Version, s.Version
	case !errors.Is(err, rules.ErrNoRules):
		return fs.fail(rf.failed(err))
	}
	this := "version " + set.Version()
	if !set.Versioned() {
		this = "no version (hash " + set.Version() + ")"
	}
	fmt.Fprintf(stdout, "dry run: %s over %s at %s\n", this, from, rf.key)
	refused := false
	refuse := func(format string, args ...any) {
		fmt.Fprintf(stdout, format+"\n", args...)
		refused = true
	}
	switch {
	case !set.Versioned():
		newer := ""
		if stored != nil {
			newer = fmt.Sprintf(", newer than the stored version %q", storedVersion)
		}
		refuse("refused: the document has no version (its hash is %s): give it a version: field%s", set.Version(), newer)
	case stored != nil && storedVersion == set.Version():
		refuse("refused: version %s is stored already, and instances running it never read it again: give the document a new version", set.Version())
	case ignoring(ctx, client, rf.key, set, force) != "":
		refuse("refused: version %s runs, as read from Redis, on %s: other rules than this document's, and an instance never reads again the version it runs: give the document a new version",
			set.Version(), ignoring(ctx, client, rf.key, set, force))
	case stored != nil && rules.CompareVersions(set.Version(), storedVersion) <= 0 && force:
		// As the push's script does: under -force, any version but the one stored (1.00 over
		// 1.0 too, which compare equal).
		fmt.Fprintf(stdout, "forced: version %s rolls back %s\n", set.Version(), storedVersion)
	case stored != nil && rules.CompareVersions(set.Version(), storedVersion) <= 0:
		refuse("refused without -force: version %s is not newer than %s", set.Version(), storedVersion)
	}
	if expect.set && storedVersion != expect.value && !force {
		refuse("refused without -force: the stored version is %q, not the -expect %q", storedVersion, expect.value)
	}
	if len(set.Rules()) == 0 {
		fmt.Fprintln(stdout, "no rules (allow_empty: true): every instance that applies it limits nothing")
	}
	changes := rules.Diff(stored, set)
	for _, c := range changes {
		fmt.Fprintln(stdout, c)
	}
	if len(changes) == 0 {
		fmt.Fprintln(stdout, "no rule changes")
	}
	if refused {
		fmt.Fprintf(fs.stderr, "%s: -dry-run: the push would be refused; nothing was written\n", fs.Name())
		return exitRefused
	}
	return 0
}

// awaitFleet waits until every live instance has applied or refused version, pushed at
// pushedAt (the Redis server's clock), at most wait, and reports. Only a record made since the
// push answers it: one made before may name the version and describe other rules (the
// default rules an instance started on, of that version's name). Each reading of the fleet
// has -timeout of its own: the wait is not bounded by the -timeout of the push before it (with
// the defaults, 10 s each, a lagging instance turned a successful push into "no answer within
// -timeout", exit 1, and no report).
func awaitFleet(rf *redisFlags, client redis.UniversalClient, version string, pushedAt time.Time, wait time.Duration, stdout, stderr io.Writer) int {
	deadline := time.Now().Add(wait)
	var fleet []rules.Instance
	for {
		ctx, cancel := context.WithTimeout(context.Background(), rf.timeout)
		var err error
		fleet, err = rules.Fleet(ctx, client, rf.key)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "ratelimit push: %v\n", rf.failed(err))
			return 1
		}
		fleet, _ = splitFleet(fleet) // the engines: the others do not run the stored rules
		if len(fleet) == 0 {
			fmt.Fprintf(stdout, "no instance is watching %s: nobody has applied version %s\n", rf.key, version)
			fmt.Fprintf(stderr, "ratelimit push: no instance is watching %s\n", rf.key)
			return exitWaiting
		}
		if answered(fleet, version, pushedAt) == len(fleet) || time.Now().After(deadline) {
			break
		}
		time.Sleep(min(100*time.Millisecond, time.Until(deadline)+time.Millisecond))
	}
	applied, refused, pending := fleetReport(fleet, version, pushedAt)
	line := fmt.Sprintf("applied on %d of %d instances", len(applied), len(fleet))
	if len(refused) > 0 {
		line += fmt.Sprintf("; refused on %d: %s", len(refused), strings.Join(refused, "; "))
	}
	if len(pending) > 0 {
		line += fmt.Sprintf("; no answer yet from %d: %s", len(pending), strings.Join(pending, ", "))
	}
	fmt.Fprintln(stdout, line)
	switch {
	case len(refused) > 0:
		fmt.Fprintf(stderr, "ratelimit push: version %s refused on %d of %d instances\n", version, len(refused), len(fleet))
		return exitRefused
	case len(pending) > 0:
		fmt.Fprintf(stderr, "ratelimit push: version %s not yet applied on %d of %d instances after -wait %v\n", version, len(pending), len(fleet), wait)
		return exitWaiting
	}
	return 0
}

// answered counts the instances that applied or refused version in a record made since
// (see fleetReport).
func answered(fleet []rules.Instance, version string, since time.Time) int {
	_, _, pending := fleetReport(fleet, version, since)
	return len(fleet) - len(pending)
}

// fleetReport sorts the instances by what they did with version: the names that applied it,
// those that refused it with why, and those that have not answered. A refusal wins: an
// instance that refused version and runs a version of that name runs other rules under it
// (the default rules it started on, say). Only a record made at since or later answers (the
// push's time, on the Redis server's clock, to the millisecond; the zero time for any): an
// earlier one may describe rules of that version's name that are not the pushed ones.
func fleetReport(fleet []rules.Instance, version string, since time.Time) (applied, refused, pending []string) {
	for _, in := range fleet {
		switch {
		case in.Seen.Before(since):
			pending = append(pending, in.Name+" (running "+in.Running+", no record since the push)")
		case in.Refused != "" && in.Refused == version:
			refused = append(refused, in.Name+": "+in.Reason)
		case in.Running == version:
			applied = append(applied, in.Name)
		default:
			pending = append(pending, in.Name+" (running "+in.Running+")")
		}
	}
	return applied, refused, pending
}

// optionalString is a string flag that knows whether it was given, "" included.
type optionalString struct {
	value string
	set   bool
}

var _ flag.Value = (*optionalString)(nil)

func (o *optionalString) String() string { return o.value }
func (o *optionalString) Set(s string) error {
	o.value, o.set = s, true
	return nil
}
