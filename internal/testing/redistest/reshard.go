package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// SpareCluster is a Redis Cluster of the test's own with a spare master: a node that joined
// the cluster serving no slot and has never run anything a client sent, to which a test moves
// slots as a reshard onto a new node does.
type SpareCluster struct {
	// Addrs are the seed addresses of the three masters that serve the slots at the start.
	Addrs []string
	// SpareAddr is the spare master's address.
	SpareAddr string

	nodes []*server // three masters, then the spare
}

// ClusterWithSpare starts a 3-master cluster and a spare master that every master knows; they
// are stopped when the test ends. Missing redis-server skips or fails the test as
// [Standalone] does.
func ClusterWithSpare(t testing.TB) *SpareCluster {
	t.Helper()
	c := &SpareCluster{nodes: clusterPlusOne(t, "a cluster with a spare master", "spare-cluster", clusterArgs, spareArgs)}
	for _, s := range c.nodes[:clusterNodes] {
		c.Addrs = append(c.Addrs, s.addr())
	}
	c.SpareAddr = c.nodes[clusterNodes].addr()
	if err := c.join(); err != nil {
		t.Fatalf("redistest: adding the spare master: %v", err)
	}
	return c
}

// spareNodeTimeout is the spare's cluster node timeout (the masters keep Redis' 15 s). A master
// that saw no majority of the slots' masters, as the spare before it meets them, waits its
// node timeout (5 s at most) before it calls the cluster ok: 5 s of every ClusterWithSpare by
// default. Its failure reports alone never mark a master failed (that takes two masters'), and
// it counts a master unreachable only after 2 s without an answer.
const spareNodeTimeout = "2000"

// spareArgs returns the extra redis-server arguments of the spare master.
func spareArgs(dir string, port int) []string {
	return append(clusterArgs(dir, port), "--cluster-node-timeout", spareNodeTimeout)
}

// join has the spare meet every master, and waits until each knows it and it sees the
// cluster ok.
func (c *SpareCluster) join() error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	spare := c.client(clusterNodes)
	defer spare.Close()
	for _, m := range c.nodes[:clusterNodes] {
		if err := spare.ClusterMeet(ctx, loopback, strconv.Itoa(m.port)).Err(); err != nil {
			return err
		}
	}
	id, err := spare.ClusterMyID(ctx).Result()
	if err != nil {
		return err
	}
	for i := range clusterNodes {
		for {
			n := c.client(i)
			nodes, _ := n.ClusterNodes(ctx).Result()
			n.Close()
			if strings.Contains(nodes, id) {
				break
			}
			if err := wait(ctx, "every master to know the spare"); err != nil {
				return err
			}
		}
	}
	// The spare serves once gossip has told it every master's slots.
	for !strings.Contains(spare.ClusterInfo(ctx).Val(), "cluster_state:ok") {
		if err := wait(ctx, "the spare to see the cluster ok"); err != nil {
			return err
		}
	}
	return nil
}

// client returns a plain client of node i (the spare is clusterNodes).
func (c *SpareCluster) client(i int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: c.nodes[i].addr(), MaxRetries: -1})
}

// Slot returns the hash slot of key.
func (c *SpareCluster) Slot(t testing.TB, key string) int {
	t.Helper()
	n := c.client(0)
	defer n.Close()
	slot, err := n.ClusterKeySlot(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("redistest: CLUSTER KEYSLOT: %v", err)
	}
	return int(slot)
}

// owner returns the index of the master that served slot at the start (formCluster gives
// each a third of the slots, in order).
func owner(slot int) int { return slot * clusterNodes / clusterSlots }

// BeginMove starts moving slot, which must still be on its first master, to the spare: the
// spare imports it and its master migrates it. Until MoveKeys, its keys stay where they are:
// a call naming only keys that moved is redirected (ASK), one naming keys on both nodes is
// answered TRYAGAIN.
func (c *SpareCluster) BeginMove(t testing.TB, slot int) {
	t.Helper()
	ctx := context.Background()
	from, to := c.client(owner(slot)), c.client(clusterNodes)
	defer from.Close()
	defer to.Close()
	fromID, toID := from.ClusterMyID(ctx).Val(), to.ClusterMyID(ctx).Val()
	if err := to.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID).Err(); err != nil {
		t.Fatalf("redistest: SETSLOT IMPORTING on the spare: %v", err)
	}
	if err := from.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID).Err(); err != nil {
		t.Fatalf("redistest: SETSLOT MIGRATING: %v", err)
	}
}

// MoveKeys migrates the keys of slot that are still on its first master to the spare
// (BeginMove first).
func (c *SpareCluster) MoveKeys(t testing.TB, slot int) {
	t.Helper()
	ctx := context.Background()
	from := c.client(owner(slot))
	defer from.Close()
	spare := c.nodes[clusterNodes]
	for {
		keys, err := from.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			t.Fatalf("redistest: CLUSTER GETKEYSINSLOT: %v", err)
		}
		if len(keys) == 0 {
			return
		}
		args := []any{"MIGRATE", loopback, spare.port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := from.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("redistest: MIGRATE: %v", err)
		}
	}
}

// MoveKey migrates key, of a slot BeginMove began to move, from its first master to the
// spare, leaving the slot's other keys where they are.
func (c *SpareCluster) MoveKey(t testing.TB, slot int, key string) {
	t.Helper()
	from := c.client(owner(slot))
	defer from.Close()
	spare := c.nodes[clusterNodes]
	if err := from.Do(context.Background(), "MIGRATE", loopback, spare.port, key, 0, 5000).Err(); err != nil {
		t.Fatalf("redistest: MIGRATE %s: %v", key, err)
	}
}

// EndMove gives slot to the spare on every node (MoveKeys first): its first master then
// redirects every call for it (MOVED).
func (c *SpareCluster) EndMove(t testing.TB, slot int) {
	t.Helper()
	ctx := context.Background()
	spare := c.client(clusterNodes)
	id := spare.ClusterMyID(ctx).Val()
	spare.Close()
	// The spare first, then the master it came from, as redis-cli --cluster does.
	for _, i := range []int{clusterNodes, owner(slot), (owner(slot) + 1) % clusterNodes, (owner(slot) + 2) % clusterNodes} {
		n := c.client(i)
		err := n.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", id).Err()
		n.Close()
		if err != nil {
			t.Fatalf("redistest: SETSLOT NODE on %s: %v", c.nodes[i].addr(), err)
		}
	}
}

// Spare returns a plain client of the spare master; close it when done.
func (c *SpareCluster) Spare() *redis.Client { return c.client(clusterNodes) }
