package redistest_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// serverPID returns the process id of the server behind c.
func serverPID(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(ctxT(t), "server").Result()
	if err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("bad process_id %q", v)
			}
			return pid
		}
	}
	t.Fatalf("no process_id in INFO server:\n%s", info)
	return 0
}

func TestStandalone(t *testing.T) {
	c := redistest.Standalone(t)
	ctx := ctxT(t)
	if got, err := c.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	if got := c.Options().Addr; got != redistest.Addr(t) {
		t.Errorf("client addr %q != Addr() %q", got, redistest.Addr(t))
	}
	key := redistest.Prefix(t) + "k"
	if err := c.Set(ctx, key, "v1", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := c.Get(ctx, key).Result(); err != nil || got != "v1" {
		t.Fatalf("GET = %q, %v; want v1", got, err)
	}

	if os.Getenv("REDIS_ADDR") == "" {
		// Our own server: loopback, no persistence.
		if addr := redistest.Addr(t); !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Errorf("Addr() = %q, want 127.0.0.1:port", addr)
		}
		cfg, err := c.ConfigGet(ctx, "*").Result()
		if err != nil {
			t.Fatalf("CONFIG GET: %v", err)
		}
		for k, want := range map[string]string{"save": "", "appendonly": "no", "bind": "127.0.0.1", "loglevel": "warning"} {
			if cfg[k] != want {
				t.Errorf("CONFIG %s = %q, want %q", k, cfg[k], want)
			}
		}
	}
}

// TestStandaloneShared checks that parallel tests share one server, each
// with its own client.
func TestStandaloneShared(t *testing.T) {
	redistest.Standalone(t) // skip here, not in each subtest, without redis-server
	var mu sync.Mutex
	pids := map[int]bool{}
	clients := map[*redis.Client]bool{}
	t.Run("group", func(t *testing.T) {
		for i := range 8 {
			t.Run(strconv.Itoa(i), func(t *testing.T) {
				t.Parallel()
				c := redistest.Standalone(t)
				pid := serverPID(t, c)
				mu.Lock()
				pids[pid] = true
				clients[c] = true
				mu.Unlock()
			})
		}
	})
	if len(pids) != 1 || len(clients) != 8 {
		t.Errorf("got %d server pids and %d clients, want 1 and 8", len(pids), len(clients))
	}
}

func TestPrefix(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	record := func(t *testing.T, p string) {
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := seen[p]; ok {
			t.Errorf("prefix %q returned twice (%s and %s)", p, prev, t.Name())
		}
		seen[p] = t.Name()
	}
	check := func(t *testing.T, p string) {
		if !strings.HasPrefix(p, "rlt:") || !strings.HasSuffix(p, ":") {
			t.Errorf("prefix %q: want rlt:...:", p)
		}
		if strings.ContainsAny(p, "{} \t\n") {
			t.Errorf("prefix %q contains unsafe characters", p)
		}
	}

	a, b := redistest.Prefix(t), redistest.Prefix(t)
	if a == b {
		t.Errorf("two calls returned the same prefix %q", a)
	}
	if !strings.HasPrefix(a, "rlt:TestPrefix:") {
		t.Errorf("prefix %q does not name the test", a)
	}

	t.Run("parallel", func(t *testing.T) {
		names := []string{"plain", "with {hash} tag", "spaces and\ttabs", "unicode-ü", "slash/in/name"}
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				for range 100 {
					p := redistest.Prefix(t)
					check(t, p)
					record(t, p)
				}
			})
		}
	})
	if len(seen) != 500 {
		t.Errorf("got %d distinct prefixes, want 500", len(seen))
	}
}

func TestCluster(t *testing.T) {
	c := redistest.Cluster(t)
	ctx := ctxT(t)
	p := redistest.Prefix(t)

	// Three masters, each answering.
	var mu sync.Mutex
	masters := map[string]bool{}
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		if err := m.Ping(ctx).Err(); err != nil {
			return err
		}
		mu.Lock()
		masters[m.Options().Addr] = true
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatalf("ForEachMaster: %v", err)
	}
	if len(masters) != 3 {
		t.Fatalf("got %d masters %v, want 3", len(masters), masters)
	}

	// Keys with different hash tags land on different masters.
	keys := []string{"{a}" + p + "k", "{b}" + p + "k", "{c}" + p + "k"}
	slots := map[int64]bool{}
	for _, k := range keys {
		slot, err := c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", k, err)
		}
		slots[slot] = true
		if err := c.Set(ctx, k, "v", time.Minute).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	if len(slots) != 3 {
		t.Fatalf("keys %v map to slots %v, want 3 distinct", keys, slots)
	}
	owner := map[string]string{} // key -> master address
	err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		for _, k := range keys {
			// A master that does not own the key's slot answers MOVED.
			n, err := m.Exists(ctx, k).Result()
			if err != nil && strings.HasPrefix(err.Error(), "MOVED ") {
				continue
			}
			if err != nil {
				return err
			}
			if n == 1 {
				mu.Lock()
				owner[k] = m.Options().Addr
				mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ForEachMaster: %v", err)
	}
	distinct := map[string]bool{}
	for _, k := range keys {
		if owner[k] == "" {
			t.Fatalf("key %s found on no master", k)
		}
		distinct[owner[k]] = true
	}
	if len(distinct) != 3 {
		t.Errorf("keys landed on %d masters (%v), want 3", len(distinct), owner)
	}

	// A multi-key script works on keys sharing a hash tag...
	const script = `redis.call('SET', KEYS[1], ARGV[1]); redis.call('SET', KEYS[2], ARGV[1]);
return redis.call('MGET', KEYS[1], KEYS[2])`
	got, err := c.Eval(ctx, script, []string{"{x}" + p + "1", "{x}" + p + "2"}, "v").StringSlice()
	if err != nil {
		t.Fatalf("EVAL on {x} keys: %v", err)
	}
	if fmt.Sprint(got) != "[v v]" {
		t.Errorf("EVAL on {x} keys = %v, want [v v]", got)
	}

	// ...and fails with CROSSSLOT on keys in different slots.
	k1 := p + "one"
	s1, err := c.ClusterKeySlot(ctx, k1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var k2 string
	for i := 0; k2 == ""; i++ {
		k := p + "other" + strconv.Itoa(i)
		s, err := c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if s != s1 {
			k2 = k
		}
	}
	err = c.Eval(ctx, script, []string{k1, k2}, "v").Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Errorf("EVAL on keys in different slots: err = %v, want CROSSSLOT", err)
	}
}

// TestClusterShared checks that parallel tests can use the cluster and the
// standalone server concurrently.
func TestClusterShared(t *testing.T) {
	for i := range 6 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			var cmd redis.Cmdable
			if i%2 == 0 {
				cmd = redistest.Cluster(t)
			} else {
				cmd = redistest.Standalone(t)
			}
			key := redistest.Prefix(t) + "n"
			for range 20 {
				if err := cmd.Incr(ctx, key).Err(); err != nil {
					t.Fatalf("INCR: %v", err)
				}
			}
			if n, err := cmd.Get(ctx, key).Int(); err != nil || n != 20 {
				t.Fatalf("GET = %d, %v; want 20", n, err)
			}
		})
	}
}

func TestKillRestart(t *testing.T) {
	c := redistest.Standalone(t)
	ctx := ctxT(t)
	addr := redistest.Addr(t)
	pid := serverPID(t, c)

	redistest.Kill(t)
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections after Kill", addr)
	}
	redistest.Kill(t) // idempotent

	redistest.Restart(t)
	redistest.Restart(t) // idempotent
	if got := redistest.Addr(t); got != addr {
		t.Errorf("Addr after Restart = %q, want %q", got, addr)
	}
	// The client's pool still holds connections to the dead process; allow
	// one failed attempt while it notices.
	var err error
	for range 3 {
		if err = c.Ping(ctx).Err(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	if newPID := serverPID(t, c); newPID == pid {
		t.Errorf("server pid %d unchanged after Kill/Restart", pid)
	}
}

// TestKillRestartsOnCleanup checks that a killed server comes back for the
// next test even if the killing test does not call Restart.
func TestKillRestartsOnCleanup(t *testing.T) {
	t.Run("kill", func(t *testing.T) {
		redistest.Kill(t)
	})
	c := redistest.Standalone(t)
	if err := c.Ping(ctxT(t)).Err(); err != nil {
		t.Fatalf("PING after a subtest's Kill: %v", err)
	}
}
