package redistest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// clusterNodes is the number of masters in a cluster started here.
	clusterNodes = 3
	// clusterTimeout bounds how long forming the cluster may take.
	clusterTimeout = 20 * time.Second
	// clusterSlots is the number of hash slots of a Redis Cluster.
	clusterSlots = 16384
)

// readyKeys are probed to check that a cluster client can route commands.
// Their hash tags map to slots 15495, 3300 and 7365: one per master.
var readyKeys = []string{"redistest:ready:{a}", "redistest:ready:{b}", "redistest:ready:{c}"}

// clusterArgs returns the extra redis-server arguments of a cluster node.
func clusterArgs(dir string, port int) []string {
	return []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", port)),
	}
}

// startCluster starts the cluster nodes and forms the cluster. On failure it
// stops the nodes it started.
func startCluster() ([]*server, error) {
	if _, err := lookPath(); err != nil {
		return nil, err
	}
	srvs := make([]*server, clusterNodes)
	errs := make([]error, clusterNodes)
	var wg sync.WaitGroup
	for i := range srvs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srvs[i], errs[i] = startServer(fmt.Sprintf("cluster-%d", i), clusterArgs)
		}()
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil {
		err = formCluster(srvs)
	}
	if err != nil {
		for _, s := range srvs {
			if s != nil {
				_ = s.stop()
			}
		}
		return nil, err
	}
	return srvs, nil
}

// formCluster turns freshly started, empty cluster-enabled nodes into a
// cluster: each node gets a distinct config epoch and a third of the slots,
// the first node meets the others, and then we wait until every node reports
// a healthy cluster and a cluster client can route commands to each master.
func formCluster(srvs []*server) error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()

	addrs := make([]string, len(srvs))
	nodes := make([]*redis.Client, len(srvs))
	for i, s := range srvs {
		addrs[i] = s.addr()
		nodes[i] = redis.NewClient(&redis.Options{Addr: addrs[i], MaxRetries: -1})
		defer nodes[i].Close()
	}

	for i, n := range nodes {
		lo := i * clusterSlots / len(nodes)
		hi := (i+1)*clusterSlots/len(nodes) - 1
		// Distinct epochs spare the nodes the epoch collision dance;
		// redis-cli --cluster create does the same.
		if err := n.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("CLUSTER SET-CONFIG-EPOCH on %s: %w", addrs[i], err)
		}
		if err := addSlots(ctx, n, lo, hi); err != nil {
			return fmt.Errorf("assigning slots %d-%d to %s: %w", lo, hi, addrs[i], err)
		}
	}
	// Every node meets every other one, rather than relying on gossip to
	// spread the news, which takes seconds.
	for i := range nodes {
		for j := range nodes {
			if i == j {
				continue
			}
			if err := nodes[i].ClusterMeet(ctx, loopback, strconv.Itoa(srvs[j].port)).Err(); err != nil {
				return fmt.Errorf("CLUSTER MEET %s from %s: %w", addrs[j], addrs[i], err)
			}
		}
	}

	var last error
	for {
		last = clusterHealthy(ctx, nodes)
		if last == nil {
			last = clusterRoutes(ctx, addrs)
			if last == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			var tails strings.Builder
			for _, s := range srvs {
				tails.WriteString(s.logTail())
			}
			return fmt.Errorf("cluster %s not ready within %v: %w%s",
				strings.Join(addrs, ","), clusterTimeout, last, tails.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// addSlots assigns the slots lo..hi to the node, with CLUSTER ADDSLOTSRANGE
// or, on servers older than Redis 7.0 that lack it, CLUSTER ADDSLOTS.
func addSlots(ctx context.Context, n *redis.Client, lo, hi int) error {
	err := n.ClusterAddSlotsRange(ctx, lo, hi).Err()
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "unknown subcommand") {
		return err
	}
	slots := make([]int, 0, hi-lo+1)
	for s := lo; s <= hi; s++ {
		slots = append(slots, s)
	}
	return n.ClusterAddSlots(ctx, slots...).Err()
}

// clusterHealthy reports, as an error, why some node does not yet see a
// complete, healthy cluster; nil once all of them do.
func clusterHealthy(ctx context.Context, nodes []*redis.Client) error {
	want := map[string]string{
		"cluster_state":          "ok",
		"cluster_slots_assigned": strconv.Itoa(clusterSlots),
		"cluster_known_nodes":    strconv.Itoa(len(nodes)),
		"cluster_size":           strconv.Itoa(len(nodes)),
	}
	for _, n := range nodes {
		info, err := n.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER INFO on %s: %w", n.Options().Addr, err)
		}
		got := map[string]string{}
		for line := range strings.SplitSeq(info, "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
				got[k] = v
			}
		}
		for k, v := range want {
			if got[k] != v {
				return fmt.Errorf("CLUSTER INFO on %s: %s is %q, want %q", n.Options().Addr, k, got[k], v)
			}
		}
	}
	return nil
}

// clusterRoutes checks that a cluster client seeded with addrs can write and
// read a key on every master.
func clusterRoutes(ctx context.Context, addrs []string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Clone(addrs)})
	defer c.Close()
	for _, k := range readyKeys {
		if err := c.Set(ctx, k, "1", time.Minute).Err(); err != nil {
			return fmt.Errorf("cluster client SET %s: %w", k, err)
		}
		if err := c.Get(ctx, k).Err(); err != nil {
			return fmt.Errorf("cluster client GET %s: %w", k, err)
		}
	}
	return nil
}
