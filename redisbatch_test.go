package ratelimit_test

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// wireCounter is a go-redis hook that counts the commands and pipelines on the wire whose first
// key the predicate picks.
type wireCounter struct {
	picks func(key string) bool
	n     atomic.Int64
}

func (h *wireCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *wireCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.count([]redis.Cmder{cmd}, func() error { return next(ctx, cmd) })
	}
}

func (h *wireCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return h.count(cmds, func() error { return next(ctx, cmds) })
	}
}

func (h *wireCounter) count(cmds []redis.Cmder, send func() error) error {
	for _, cmd := range cmds {
		if args := cmd.Args(); len(args) > 3 && cmd.Name() == "fcall" {
			if k, ok := args[3].(*string); ok && h.picks(*k) {
				h.n.Add(1)
				defer h.n.Add(-1)
			}
		}
	}
	return send()
}

// TestRedisClusterSlowNode: calls are batched per node of a Cluster, so a node that stops
// answering holds up its own calls only: with one master paused and more of its calls waiting
// than a batcher sends at once, calls to another master go on being answered.
func TestRedisClusterSlowNode(t *testing.T) {
	shared := redistest.Cluster(t)
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Clone(shared.Options().Addrs), ContextTimeoutEnabled: true})
	t.Cleanup(func() { cluster.Close() })
	policy := ratelimit.Policy{Limit: 1000, Window: time.Hour}
	prefix := redistest.Prefix(t)
	l := mustNew(t, ratelimit.NewRedisStore(cluster, ratelimit.WithPrefix(prefix)), policy)

	// Two identities on two masters.
	master := func(id string) *redis.Client {
		c, err := cluster.MasterForKey(ctx, ratelimit.StorageKey(prefix, id, policy, false))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	slow, fast := "slow", ""
	for i := 0; fast == ""; i++ {
		if id := "fast" + strconv.Itoa(i); master(id).Options().Addr != master(slow).Options().Addr {
			fast = id
		}
	}
	paused := master(slow)
	if _, err := l.Allow(ctx, slow); err != nil { // loads the function on the paused node
		t.Fatal(err)
	}
	hook := &wireCounter{picks: func(key string) bool { return strings.Contains(key, "{slow}") }}
	cluster.AddHook(hook)

	if err := paused.Do(ctx, "CLIENT", "PAUSE", 60_000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	unpause := sync.OnceFunc(func() {
		if err := paused.Do(context.Background(), "CLIENT", "UNPAUSE").Err(); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(unpause)
	const stuck = 8
	var wg sync.WaitGroup
	for range stuck {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Allow(context.Background(), slow); err != nil {
				t.Errorf("a call to the paused node, once it is back: %v", err)
			}
		}()
	}
	for hook.n.Load() < 3 { // the paused node's batcher has its calls on the wire, the rest queued
		time.Sleep(time.Millisecond)
	}
	for i := range 20 {
		c, cancel := context.WithTimeout(ctx, 30*time.Second) // a hang, not a deadline to meet
		d, err := l.Allow(c, fast)
		cancel()
		if err != nil || !d.Allowed {
			t.Fatalf("call %d to another master while one is paused: %v, %v", i, d.Allowed, err)
		}
	}
	unpause()
	wg.Wait()
}

// Checks that arrive while others are on the wire leave merged, several to a call of the
// server: 64 goroutines making 3,200 checks cost the server fewer FCALLs than checks, and each
// check is answered as alone (every identity admitted once, then denied); one goroutine's
// checks go one call each.
func TestChecksMergeUnderLoad(t *testing.T) {
	addr := redistest.Private(t)
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithDenialCache(0)), ratelimit.Policy{Limit: 1, Window: time.Hour})
	allow(t, l, "warm-up", 1) // loads the library
	fcalls := func() int64 {
		t.Helper()
		info, err := client.Info(ctx, "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		return loadgen.CommandStats(info)["fcall"].Calls
	}
	if err := client.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var admitted, denied atomic.Int64
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				id := "user:" + strconv.Itoa(g*25+i)
				for range 2 { // admitted, then denied
					if d := allow(t, l, id, 1); d.Allowed {
						admitted.Add(1)
					} else {
						denied.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	if a, d := admitted.Load(), denied.Load(); a != 1600 || d != 1600 {
		t.Errorf("admitted %d and denied %d of 3,200 checks of 1,600 identities; want 1,600 each", a, d)
	}
	if n := fcalls(); n >= 3200 {
		t.Errorf("%d FCALLs for 3,200 concurrent checks; want fewer: merged", n)
	}
	if err := client.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		allow(t, l, "alone:"+strconv.Itoa(i), 1)
	}
	if n := fcalls(); n != 10 {
		t.Errorf("%d FCALLs for 10 checks one after the other; want 10", n)
	}
}

// A server in cluster mode behind one address (a managed service with one shard) refuses a
// merged call, whose keys hash to several slots: the store says so once, in a warning and to
// its observer (merged_checks), and every check is answered, one call each.
func TestMergeRefusedByAClusterModeServer(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: redistest.OneShardCluster(t), ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	var logged syncBuffer
	obs := &evictionSeen{}
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithDenialCache(0), ratelimit.WithObserver(obs.observer()), ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil)))),
		ratelimit.Policy{Limit: 1, Window: time.Hour})
	allow(t, l, "warm-up", 1) // loads the library
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				d, err := l.Allow(ctx, "user:"+strconv.Itoa(g*10+i))
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := admitted.Load(); n != 640 {
		t.Errorf("admitted %d of 640 identities' first checks; want all", n)
	}
	if n := strings.Count(logged.String(), "refused a merged call"); n != 1 {
		t.Errorf("logged %d warnings of the refusal; want 1:\n%s", n, logged.String())
	}
	if got := obs.degradations(); !slices.Equal(got, []string{"merged_checks"}) {
		t.Errorf("reported degradations %v; want [merged_checks]", got)
	}
}
