package redistest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelGroup is a primary, its replica and a Sentinel watching them, of one test's own.
type SentinelGroup struct {
	// MasterName is the name the Sentinel knows the primary by.
	MasterName string
	// SentinelAddrs are the Sentinels' addresses, for redis.FailoverOptions.
	SentinelAddrs []string

	primary, replica *server
}

// Sentinel starts a primary, a replica of it and a Sentinel that fails over 200 ms after the
// primary stops answering, all on loopback, and returns once the replica acknowledges the
// primary's writes; they are stopped when the test ends. Missing
// redis-server skips or fails the test as [Standalone] does.
func Sentinel(t testing.TB) *SentinelGroup {
	t.Helper()
	if _, err := lookPath(); err != nil {
		failUnavailable(t, "a sentinel group", err)
	}
	start := func(name string, extra func(string, int) []string, sentinel string) *server {
		t.Helper()
		s, err := startServerAs(name, extra, sentinel)
		if err != nil {
			t.Fatalf("redistest: %s: %v", name, err)
		}
		t.Cleanup(func() { _ = s.stop() })
		return s
	}
	g := &SentinelGroup{MasterName: "primary"}
	g.primary = start("sentinel-primary", func(string, int) []string {
		return []string{"--repl-diskless-sync-delay", "0"} // the replica syncs at once, not in 5 s
	}, "")
	g.replica = start("sentinel-replica", func(string, int) []string {
		return []string{"--replicaof", loopback, strconv.Itoa(g.primary.port)}
	}, "")
	conf := fmt.Sprintf("sentinel monitor %s %s %d 1\nsentinel down-after-milliseconds %s 200\nsentinel failover-timeout %s 2000\n",
		g.MasterName, loopback, g.primary.port, g.MasterName, g.MasterName)
	sentinel := start("sentinel", nil, conf)
	g.SentinelAddrs = []string{sentinel.addr()}
	// Ready when the replica has synchronised and the Sentinel knows it.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinel.addr()})
	defer sc.Close()
	pc := redis.NewClient(&redis.Options{Addr: g.primary.addr()})
	defer pc.Close()
	for {
		replicas, err := sc.Replicas(ctx, g.MasterName).Result()
		// Replication flows: a write to the primary is acknowledged by the replica (WAIT).
		pc.Set(ctx, "redistest:replicated", "1", time.Minute)
		acked, _ := pc.Do(ctx, "WAIT", 1, 100).Int()
		if err == nil && len(replicas) > 0 && replicas[0]["flags"] == "slave" && acked >= 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("redistest: the Sentinel never saw the replica ready (%v)", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return g
}

// KillPrimary stops the primary abruptly (SIGKILL, as a crash): the Sentinel promotes the
// replica.
func (g *SentinelGroup) KillPrimary(t testing.TB) {
	t.Helper()
	if err := g.primary.kill(); err != nil {
		t.Fatalf("redistest: killing the primary: %v", err)
	}
}

// ReplicaAddr is the address of the replica, the primary after a failover.
func (g *SentinelGroup) ReplicaAddr() string { return g.replica.addr() }
