package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// FailoverCluster is a Redis Cluster of the test's own whose first master has a replica, so
// that killing that master makes the cluster fail over.
type FailoverCluster struct {
	// Addrs are the seed addresses of every node.
	Addrs []string

	nodes []*server // three masters, then the replica of the first
}

// ClusterWithReplica starts a 3-master cluster and a replica of the first master (which holds
// the slots 0–5460, such as that of the hash tag {b}), all with a node timeout of 500 ms;
// they are stopped when the test ends. Missing redis-server skips or fails the test as
// [Standalone] does.
func ClusterWithReplica(t testing.TB) *FailoverCluster {
	t.Helper()
	args := func(dir string, port int) []string {
		return append(clusterArgs(dir, port), "--cluster-node-timeout", "500", "--repl-diskless-sync-delay", "0")
	}
	c := &FailoverCluster{nodes: clusterPlusOne(t, "a cluster with a replica", "failover-cluster", args, args)}
	for _, s := range c.nodes {
		c.Addrs = append(c.Addrs, s.addr())
	}
	if err := c.addReplica(); err != nil {
		t.Fatalf("redistest: adding the replica: %v", err)
	}
	return c
}

// clusterPlusOne starts a 3-master cluster of the test's own (what names it, in a skip or a
// failure), its nodes with the arguments of args, and one more node, with those of oneArgs,
// not yet in it; they are stopped when the test ends.
func clusterPlusOne(t testing.TB, what, name string, args, oneArgs func(dir string, port int) []string) []*server {
	t.Helper()
	if _, err := lookPath(); err != nil {
		failUnavailable(t, what, err)
	}
	var nodes []*server
	for i := range clusterNodes + 1 {
		a := args
		if i == clusterNodes {
			a = oneArgs
		}
		s, err := startServer(fmt.Sprintf("%s-%d", name, i), a)
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		t.Cleanup(func() { _ = s.stop() })
		nodes = append(nodes, s)
	}
	if err := formCluster(nodes[:clusterNodes]); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return nodes
}

// addReplica joins the last node to the cluster as a replica of the first, and waits until it
// is in sync.
func (c *FailoverCluster) addReplica() error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	master := redis.NewClient(&redis.Options{Addr: c.nodes[0].addr(), MaxRetries: -1})
	defer master.Close()
	replica := redis.NewClient(&redis.Options{Addr: c.nodes[clusterNodes].addr(), MaxRetries: -1})
	defer replica.Close()
	id, err := master.ClusterMyID(ctx).Result()
	if err != nil {
		return err
	}
	// It meets every master: they vote when it asks to take over, and gossip alone would take
	// seconds to introduce it.
	for _, m := range c.nodes[:clusterNodes] {
		if err := replica.ClusterMeet(ctx, loopback, strconv.Itoa(m.port)).Err(); err != nil {
			return err
		}
	}
	replicaID, err := replica.ClusterMyID(ctx).Result()
	if err != nil {
		return err
	}
	for {
		nodes, _ := replica.ClusterNodes(ctx).Result()
		if strings.Contains(nodes, id) {
			if err := replica.ClusterReplicate(ctx, id).Err(); err == nil {
				break
			}
		}
		if err := wait(ctx, "the replica to know its master"); err != nil {
			return err
		}
	}
	for {
		info, _ := replica.Info(ctx, "replication").Result()
		if strings.Contains(info, "master_link_status:up") && c.allKnowReplica(ctx, replicaID) {
			return nil
		}
		if err := wait(ctx, "the replica to sync, and every master to know it"); err != nil {
			return err
		}
	}
}

// allKnowReplica reports whether every master lists the replica as a replica.
func (c *FailoverCluster) allKnowReplica(ctx context.Context, id string) bool {
	for _, m := range c.nodes[:clusterNodes] {
		n := redis.NewClient(&redis.Options{Addr: m.addr(), MaxRetries: -1})
		nodes, err := n.ClusterNodes(ctx).Result()
		n.Close()
		if err != nil {
			return false
		}
		known := false
		for line := range strings.SplitSeq(nodes, "\n") {
			if strings.HasPrefix(line, id) && strings.Contains(line, "slave") {
				known = true
			}
		}
		if !known {
			return false
		}
	}
	return true
}

// wait pauses between polls, or reports what was awaited when ctx ends.
func wait(ctx context.Context, what string) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
	case <-time.After(50 * time.Millisecond):
		return nil
	}
}

// KillMaster stops the first master abruptly (SIGKILL, as a crash): its replica takes over
// its slots once the other masters agree it is down.
func (c *FailoverCluster) KillMaster(t testing.TB) {
	t.Helper()
	if err := c.nodes[0].kill(); err != nil {
		t.Fatalf("redistest: killing the master: %v", err)
	}
}
