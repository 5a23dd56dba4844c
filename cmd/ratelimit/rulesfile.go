package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/a7d3e0dd/ratelimit/rules"
)

// userKey stands for the application's user key (rules.WithUserKey), which a file cannot
// name: with it, the command accepts rules keyed by "user".
type userKey struct{}

// parseOptions are the options the command parses rules with.
var parseOptions = []rules.ParseOption{rules.WithUserKey(userKey{})}

// readRules reads and parses the rules file at path, which names it in its errors.
func readRules(path string) ([]byte, *rules.Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	// One byte more than Parse takes, so that it reports a file too large: a device or a pipe
	// that never ends is not read to its end.
	data, err := io.ReadAll(io.LimitReader(f, rules.MaxFileSize+1))
	if err != nil {
		return nil, nil, err
	}
	set, err := rules.Parse(path, data, parseOptions...)
	return data, set, err
}

// validateCmd parses each file and prints its version and number of rules, or its problems.
func validateCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", "FILE...", `Parses each rules file (YAML, or JSON for a name ending in .json) as rules.Parse does
and prints "FILE: ok, version V, N rules", or every problem of the file on stderr as
"file:line: field: message". A rule keyed by "user" is accepted: the application gives its
user key to rules.WithUserKey, and the command a placeholder. A file without a version: is
valid (its version is a hash of its rules), and said so: ratelimit push refuses it. A file
without rules is invalid unless it says allow_empty: true. What is valid but changes nothing
(an access entry inside a wider one, an allowed network inside a denied one, an override of a
denied client) is printed on stderr as a warning, and the file is still ok.
`, stdout, stderr)
	files, code, ok := fs.parse(args, "FILE", 1, -1)
	if !ok {
		return code
	}
	code = 0
	for _, file := range files {
		_, set, err := readRules(file)
		if err != nil {
			code = fs.fail(err)
			continue
		}
		version := "version " + set.Version()
		if !set.Versioned() {
			version = "no version (hash " + set.Version() + "; ratelimit push needs a version: field)"
		}
		fmt.Fprintf(stdout, "%s: ok, %s, %s\n", file, version, ruleCount(set, "it limits nothing"))
		for _, w := range set.Warnings() {
			fmt.Fprintf(stderr, "%v (warning: valid, but changes nothing)\n", w)
		}
	}
	return code
}

// ruleCount says how many rules set has, and when it has none what that means (nothing: say
// to whom), which a document can only say with allow_empty: true.
func ruleCount(set *rules.Set, nothing string) string {
	if n := len(set.Rules()); n > 0 {
		return plural(n, "rule")
	}
	return "no rules (allow_empty: true): " + nothing
}

// noRules rewords rules.ErrNoRules for the operator.
func noRules(err error, key string) error {
	if errors.Is(err, rules.ErrNoRules) {
		return fmt.Errorf("no rules are stored at Redis key %q: push a rules file with ratelimit push", key)
	}
	return err
}
