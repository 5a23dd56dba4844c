package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/a7d3e0dd/ratelimit/rules"
)

// pushCmd validates a rules file and stores it in Redis with rules.Push.
func pushCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("push", redisSynopsis+" FILE", `Validates the rules file as "ratelimit validate" does and, when it is valid, stores it in
Redis with rules.Push: the hash at -key is replaced whole and the new version published on
the channel of the same name, in one atomic step, for every instance to load. An invalid
file writes nothing. The file is stored under its base name, which picks its format and
names it in errors.
`, stdout, stderr)
	rf := addRedisFlags(fs.FlagSet)
	files, code, ok := fs.parse(args, "FILE", 1, 1)
	if !ok {
		return code
	}
	if err := rf.check(); err != nil {
		return fs.usageError("%v", err)
	}
	data, _, err := readRules(files[0])
	if err != nil {
		return fs.fail(err)
	}
	client, ctx, cancel := rf.client()
	defer cancel()
	defer client.Close()
	name := filepath.Base(files[0])
	set, err := rules.Push(ctx, client, rf.key, name, data, parseOptions...)
	if err != nil {
		return fs.fail(err)
	}
	fmt.Fprintf(stdout, "pushed %s to %s: version %s, %s\n", name, rf.key, set.Version(), plural(len(set.Rules()), "rule"))
	return 0
}
