package main

import (
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// The command on a Redis Cluster: a flag that a Cluster cannot honour is a usage error,
// whichever form names the Cluster, and a node of a Cluster reached as one server says what
// to give instead of answering MOVED.

// TestDBOnACluster: -db 2 with seed nodes is a usage error (exit 2), as with -cluster or a
// Cluster URL: the Cluster client ignored it and read database 0 (the README says a flag that
// conflicts is a usage error).
func TestDBOnACluster(t *testing.T) {
	for _, args := range [][]string{
		{"-redis", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "-db", "2"},
		{"-redis", "127.0.0.1:1, 127.0.0.1:2", "-db", "1"},
		{"-redis", "127.0.0.1:1", "-cluster", "-db", "2"},
		{"-redis", "redis://127.0.0.1:1?addr=127.0.0.1:2", "-db", "2"},
	} {
		cli(t, append([]string{"version"}, args...)...).want(t, 2, "", "a Redis Cluster has only database 0: leave out -db")
	}
	// -db 0 says nothing a Cluster cannot do.
	c := redistest.Cluster(t)
	seeds := strings.Join(c.Options().Addrs, ",")
	key := redistest.Prefix(t) + "rules"
	file := write(t, "limits.yaml", stateYAML)[0]
	cli(t, "push", "-wait", "0", "-redis", seeds, "-db", "0", "-key", key, file).want(t, 0, "version s1", "")
}

// TestClusterNodeWithoutCluster: one node of a real Cluster, given without -cluster, is reached
// as a server of its own. For a key of another node's slot it answers MOVED, which the
// command printed raw: it now says to give -cluster. -db, which that server refuses (SELECT
// is not allowed in cluster mode), says a Cluster has only database 0.
func TestClusterNodeWithoutCluster(t *testing.T) {
	c := redistest.Cluster(t)
	seeds := c.Options().Addrs
	key := redistest.Prefix(t) + "rules"
	file := write(t, "limits.yaml", stateYAML)[0]
	cli(t, "push", "-wait", "0", "-redis", strings.Join(seeds, ","), "-key", key, file).want(t, 0, "version s1", "")
	moved := 0
	for _, seed := range seeds {
		r := cli(t, "version", "-redis", seed, "-key", key)
		switch {
		case r.code == 0: // the node that holds the key's slot answers
			r.want(t, 0, "version    s1\n", "")
		case strings.Contains(r.stderr, "MOVED"):
			moved++
			r.want(t, 1, "", "ratelimit version: redis "+seed+": ")
			r.want(t, 1, "", seed+" is a node of a Redis Cluster, which keeps this key on another node: give -cluster (or the Cluster's seed nodes, comma-separated)")
		default:
			t.Errorf("version -redis %s: exit %d, %s%s; want exit 0, or MOVED and what to give", seed, r.code, r.stdout, r.stderr)
		}
		for _, cmd := range [][]string{{"version"}, {"inspect", "-rule", "api", "-api-key", "abc"}} {
			r = cli(t, append(cmd, "-redis", seed, "-key", key, "-db", "2")...)
			r.want(t, 1, "", "ratelimit "+cmd[0]+": redis "+seed+" (db 2): ")
			r.want(t, 1, "", seed+" is a node of a Redis Cluster, which has only database 0: give -cluster, without -db")
		}
	}
	if moved != len(seeds)-1 {
		t.Errorf("%d of the %d masters answered MOVED for %s; want all but the one that holds its slot", moved, len(seeds), key)
	}
}
