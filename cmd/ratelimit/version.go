package main

import (
	"fmt"
	"io"
	"time"

	"github.com/a7d3e0dd/ratelimit/rules"
)

// versionCmd shows the rules stored in Redis.
func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", redisSynopsis, `Shows the rules stored in Redis at -key: their version, the name of the file pushed, when
it was pushed (on the Redis server's clock) and how many rules it holds. It fails when no
rules are stored there, or when what is stored is not a valid rules document.
The version of the command itself is "ratelimit --version".
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
	stored, err := rules.Fetch(ctx, client, rf.key, parseOptions...)
	if err != nil {
		return fs.fail(rf.failed(noRules(err, rf.key)))
	}
	fmt.Fprintln(stdout, "the rules stored in Redis (the tool's own version: ratelimit --version)")
	fmt.Fprintf(stdout, "version    %s\n", stored.Version)
	fmt.Fprintf(stdout, "file       %s\n", stored.Name)
	fmt.Fprintf(stdout, "pushed at  %s\n", stored.PushedAt.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(stdout, "rules      %d\n", len(stored.Set.Rules()))
	fmt.Fprintf(stdout, "key        %s\n", rf.key)
	return 0
}
