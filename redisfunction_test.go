package ratelimit_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// commandStat returns one field ("calls", "rejected_calls") of command's line of INFO
// commandstats on the server of c, 0 when the command has no line.
func commandStat(t *testing.T, c redis.Cmdable, command, field string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+command+":")
		if !ok {
			continue
		}
		for f := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(f, field+"="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("INFO commandstats: %s: %v", line, err)
				}
				return n
			}
		}
	}
	return 0
}

// checkWhileFlushing sends requests of one identity from several goroutines while flush
// empties the server of the identity's functions and scripts, after every 25th check of the
// first goroutine, and returns how many were allowed. Every check must succeed: the loss is the store's to repair.
func checkWhileFlushing(t *testing.T, l *ratelimit.Limiter, key string, flush func() error) int64 {
	t.Helper()
	const goroutines, each = 4, 100
	var (
		allowed atomic.Int64
		wg      sync.WaitGroup
		due     = make(chan struct{}, 1)
		flushes int
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				d, err := l.Allow(context.Background(), key)
				if err != nil {
					t.Errorf("a check while the server loses the function: %v", err)
					return
				}
				if d.Allowed {
					allowed.Add(1)
				}
				if g == 0 && i%25 == 24 {
					due <- struct{}{}
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		select {
		case <-due:
			if err := flush(); err != nil {
				t.Fatal(err)
			}
			flushes++
		case <-done:
			if flushes < each/25-1 { // the last may come after every check
				t.Fatalf("%d flushes during the checks; want %d", flushes, each/25-1)
			}
			return allowed.Load()
		}
	}
}

// TestRedisFunctionFlushed: FUNCTION FLUSH and SCRIPT FLUSH while requests are checked are
// invisible to callers, on a server and on one node of a Cluster: the store loads the library
// again and sends the call again, which the server had not run, so the count stays exact.
func TestRedisFunctionFlushed(t *testing.T) {
	const limit = 300
	policy := ratelimit.Policy{Limit: limit, Window: time.Hour}
	t.Run("standalone", func(t *testing.T) {
		client := redis.NewClient(&redis.Options{Addr: redistest.Private(t), ContextTimeoutEnabled: true})
		t.Cleanup(func() { client.Close() })
		l := mustNew(t, redisStore(t, client), policy)
		flush := func() error {
			if err := client.FunctionFlush(ctx).Err(); err != nil {
				return err
			}
			return client.ScriptFlush(ctx).Err()
		}
		if got := checkWhileFlushing(t, l, "flushed", flush); got != limit {
			t.Errorf("%d requests allowed of 400 under a limit of %d", got, limit)
		}
		if n := commandStat(t, client, "function|load", "calls"); n < 2 {
			t.Errorf("FUNCTION LOAD ran %d times; want the first load and more after flushes", n)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		cluster := redistest.Cluster(t)
		l := mustNew(t, redisStore(t, cluster), policy)
		key := redistest.Prefix(t) + "flushed"
		node, err := cluster.MasterForKey(ctx, "{"+key+"}")
		if err != nil {
			t.Fatal(err)
		}
		before := commandStat(t, node, "function|load", "calls")
		flush := func() error { return node.FunctionFlush(ctx).Err() }
		if got := checkWhileFlushing(t, l, key, flush); got != limit {
			t.Errorf("%d requests allowed of 400 under a limit of %d", got, limit)
		}
		if n := commandStat(t, node, "function|load", "calls") - before; n < 1 {
			t.Errorf("FUNCTION LOAD ran %d times on the flushed node; want loads after flushes", n)
		}
	})
}

// TestRedisWithoutFunctions: a server that turns FCALL down (Redis before 7 does not know it;
// here an ACL forbids it) gets every check as a script, with the same results.
func TestRedisWithoutFunctions(t *testing.T) {
	addr := redistest.Private(t)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { admin.Close() })
	if err := admin.Do(ctx, "ACL", "SETUSER", "scripts", "on", ">secret", "~*", "&*", "+@all", "-fcall", "-function").Err(); err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: addr, Username: "scripts", Password: "secret", ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	// No denial cache: the fourth check, which the third foretells, goes to Redis too.
	l := mustNew(t, redisStore(t, client, ratelimit.WithDenialCache(0)), ratelimit.Policy{Limit: 3, Window: time.Hour})
	for i, want := range []bool{true, true, true, false} {
		if d := allow(t, l, "old", 1); d.Allowed != want {
			t.Fatalf("request %d: allowed=%v; want %v", i, d.Allowed, want)
		}
	}
	if n := commandStat(t, admin, "fcall", "rejected_calls"); n != 1 {
		t.Errorf("FCALL was turned down %d times; want once, after which the store runs scripts", n)
	}
	if n := commandStat(t, admin, "evalsha", "calls"); n != 4 {
		t.Errorf("%d EVALSHA calls; want the 4 checks", n)
	}
}
