package ratelimit_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// twoKeys are two policies whose state is two keys of one identity: a call names both, so a
// slot moving with one of them moved and not the other is answered TRYAGAIN.
var twoKeys = []ratelimit.Policy{
	{Name: "second", Limit: 1_000_000_000, Window: time.Second},
	{Name: "hour", Limit: 1_000_000_000, Window: time.Hour},
}

// A reshard onto a master that has never run the library's function costs no check an error
// (issue 34: 143 checks failed with "ERR Function not found" for about 160 ms, and one with
// TRYAGAIN): while the slots of ten identities move one by one to a spare master, under checks
// from four goroutines, every check is decided by Redis, and the spare ends up running the
// checks as the library's function.
func TestClusterReshardToFreshMaster(t *testing.T) {
	t.Parallel() // a cluster of its own, mostly waited for
	c := redistest.ClusterWithSpare(t)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Clone(c.Addrs), ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	obs := newRecorder()
	prefix := redistest.Prefix(t)
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithObserver(obs.observer()), ratelimit.WithDenialCache(0)), twoKeys...)
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	for _, id := range ids {
		if _, err := l.Allow(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	var (
		checks, failed atomic.Int64
		firstErr       atomic.Pointer[error]
		stop           = make(chan struct{})
		wg             sync.WaitGroup
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c, cancel := generous()
				_, err := l.Allow(c, ids[i%len(ids)])
				cancel()
				checks.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	for _, id := range ids {
		slot := c.Slot(t, ratelimit.StorageKey(prefix, id, twoKeys[0], false))
		c.BeginMove(t, slot)
		time.Sleep(20 * time.Millisecond) // checks meet the slot migrating
		c.MoveKeys(t, slot)
		time.Sleep(20 * time.Millisecond) // checks meet its keys moved, the slot not yet given
		c.EndMove(t, slot)
	}
	spare := c.Spare()
	defer spare.Close()
	// The checks go on until the client's map names the spare and the library is loaded
	// there (10 s at most, however busy the machine).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		libs, _ := spare.FunctionList(ctx, redis.FunctionListQuery{}).Result()
		if len(libs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Error("the spare master never got the library")
			break
		}
	}
	close(stop)
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d checks failed during the reshard; the first: %v", n, checks.Load(), *firstErr.Load())
	}
	if stats := spare.Info(ctx, "commandstats").Val(); !strings.Contains(stats, "cmdstat_fcall:calls=") {
		t.Errorf("the spare ran no FCALL: the checks never landed there\n%s", stats)
	}
	if _, failures, _ := obs.snapshot(); len(failures) != 0 {
		t.Errorf("%d store failures reported; the first: %v", len(failures), failures[0])
	}
	t.Logf("%d checks during the reshard", checks.Load())
}

// tryAgains is a go-redis hook that counts the calls answered TRYAGAIN, and tells of the first.
type tryAgains struct {
	n     atomic.Int64
	first chan struct{}
	once  sync.Once
}

func newTryAgains() *tryAgains { return &tryAgains{first: make(chan struct{})} }

func (h *tryAgains) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *tryAgains) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN") {
			h.n.Add(1)
			h.once.Do(func() { close(h.first) })
		}
		return err
	}
}
func (h *tryAgains) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// splitSlot returns a limiter over a Cluster with a spare master whose identity "k" has one
// of its two keys on its master while its slot is migrating to the spare, and the other on
// neither: a check of both is answered TRYAGAIN until the slot has moved.
func splitSlot(t *testing.T, opts ...ratelimit.RedisOption) (*redistest.SpareCluster, int, *ratelimit.Limiter, *tryAgains) {
	c := redistest.ClusterWithSpare(t)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Clone(c.Addrs), ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	hook := newTryAgains()
	client.AddHook(hook)
	prefix := redistest.Prefix(t)
	store := ratelimit.NewRedisStore(client, append([]ratelimit.RedisOption{ratelimit.WithPrefix(prefix), ratelimit.WithDenialCache(0)}, opts...)...)
	if _, err := mustNew(t, store, twoKeys[0]).Allow(ctx, "k"); err != nil { // the first key only
		t.Fatal(err)
	}
	slot := c.Slot(t, ratelimit.StorageKey(prefix, "k", twoKeys[0], false))
	c.BeginMove(t, slot)
	return c, slot, mustNew(t, store, twoKeys...), hook
}

// A call answered TRYAGAIN (its keys split between two nodes while their slot moves: the node
// ran nothing) is sent again until the slot has moved, within its deadline (issue 34: it
// failed at once, of kind unavailable).
func TestClusterTryAgainSentAgain(t *testing.T) {
	t.Parallel() // a cluster of its own (splitSlot)
	c, slot, l, hook := splitSlot(t)
	done := make(chan error, 1)
	go func() {
		c, cancel := generous()
		defer cancel()
		_, err := l.Allow(c, "k")
		done <- err
	}()
	select {
	case <-hook.first:
	case err := <-done:
		t.Fatalf("the check ended before any TRYAGAIN: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no TRYAGAIN within 10 s")
	}
	c.MoveKeys(t, slot)
	c.EndMove(t, slot)
	if err := <-done; err != nil {
		t.Fatalf("the check answered TRYAGAIN, then sent again while the slot moved: %v", err)
	}
	t.Logf("answered TRYAGAIN %d times", hook.n.Load())
}

// A call still answered TRYAGAIN at its deadline fails, of kind unavailable, saying how many
// times it was sent, and the store says so in its log.
func TestClusterTryAgainUntilTheDeadline(t *testing.T) {
	t.Parallel() // a cluster of its own (splitSlot)
	var buf syncBuffer
	_, _, l, hook := splitSlot(t, ratelimit.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))), ratelimit.WithBreaker(0, 0))
	c, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := l.Allow(c, "k")
	if observe.ErrorKind(err) != "unavailable" || !strings.Contains(err.Error(), "TRYAGAIN") || !strings.Contains(err.Error(), "times, until the call's deadline") {
		t.Fatalf("a check whose slot never finished moving: %v; want TRYAGAIN, sent until its deadline, of kind unavailable", err)
	}
	if !errors.Is(err, ratelimit.ErrStore) || hook.n.Load() < 2 {
		t.Errorf("answered TRYAGAIN %d times; want it sent more than once", hook.n.Load())
	}
	if !strings.Contains(buf.String(), "answered TRYAGAIN until the call's deadline") {
		t.Errorf("logged:\n%s\nwant a warning of the TRYAGAIN until the deadline", buf.String())
	}
}
