package ratelimit_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// pubsubClients counts the Pub/Sub connections the server at c holds.
func pubsubClients(t *testing.T, c *redis.Client) int {
	t.Helper()
	txt, err := c.Do(context.Background(), "CLIENT", "LIST", "TYPE", "pubsub").Text()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.SplitSeq(txt, "\n") {
		if strings.TrimSpace(line) != "" {
			n++
		}
	}
	return n
}

// settled polls f, a count that falls as goroutines and connections end, until it is at most
// want or ten seconds passed, and returns its last value. (Close waits for what it ends, so
// the count is usually there at the first look; the server drops a closed connection a moment
// later.)
func settled(want int, f func() int) int {
	n := f()
	for deadline := time.Now().Add(10 * time.Second); n > want && time.Now().Before(deadline); n = f() {
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

// TestRedisStoreCloseLeavesNothing: 50 Redis stores made on one client, each used and then
// closed, leave neither their goroutines nor their Pub/Sub connections (each kept both until
// the client was closed: +50 goroutines and 50 connections).
func TestRedisStoreCloseLeavesNothing(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: redistest.Private(t)})
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	for i := range 50 {
		store := ratelimit.NewRedisStore(client)
		waitHearing(t, store) // its subscription is up: Close must end it
		l := mustNew(t, store, ratelimit.Policy{Limit: 5, Window: time.Minute})
		allow(t, l, "user-"+strconv.Itoa(i), 1)
		if err := store.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if n := settled(base+5, runtime.NumGoroutine); n > base+5 {
		t.Errorf("50 stores closed: %d goroutines more than before; want 5 at most", n-base)
	}
	if n := settled(0, func() int { return pubsubClients(t, client) }); n != 0 {
		t.Errorf("50 stores closed: the server holds %d Pub/Sub connections; want 0", n)
	}
}

// TestRedisStoreAfterClose: a closed store refuses every call with an error that says so (a
// store failure of kind unavailable), never a panic; Close is idempotent, and safe while
// requests are under way.
func TestRedisStoreAfterClose(t *testing.T) {
	ctx := context.Background()
	store := ratelimit.NewRedisStore(redistest.Standalone(t), ratelimit.WithPrefix(redistest.Prefix(t)))
	l := mustNew(t, store, ratelimit.Policy{Limit: 1000, Window: time.Minute})
	slots := mustNew(t, store, ratelimit.Policy{Name: "slots", Limit: 5, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	held := allow(t, slots, "k", 1)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 { // requests under way while the store closes
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := l.Allow(ctx, "busy"); err != nil && !errors.Is(err, ratelimit.ErrStore) {
					t.Errorf("a request as the store closed: %v; want a store error", err)
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	var closers sync.WaitGroup
	for range 3 {
		closers.Add(1)
		go func() {
			defer closers.Done()
			if err := store.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}()
	}
	closers.Wait()
	close(stop)
	wg.Wait()
	if err := store.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ratelimit.ErrStore) || observe.ErrorKind(err) != "unavailable" || !strings.Contains(err.Error(), "closed") {
			t.Errorf("%s after Close: %v (kind %q); want a store failure of kind unavailable that says the store is closed", what, err, observe.ErrorKind(err))
		}
	}
	_, err := l.Allow(ctx, "k")
	check("Allow", err)
	check("Reset", l.Reset(ctx, "k"))
	check("Release", slots.Settle(ctx, "k", held, held.Cost))
	_, err = slots.Allow(ctx, "k")
	check("an in-flight check", err)
}

// TestRedisStoreCloseGivesBackLeases: closing a store ends its quota leases and gives back
// what they did not hand out, so Redis's count is what was admitted.
func TestRedisStoreCloseGivesBackLeases(t *testing.T) {
	clock := newFakeClock()
	prefix := redistest.Prefix(t)
	policy := ratelimit.Policy{Name: "hot", Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Minute}
	store := ratelimit.NewRedisStore(redistest.Standalone(t), ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix))
	l := mustNew(t, store, policy)
	leased := false
	for range 10 {
		d := allow(t, l, "tenant", 1)
		leased = leased || d.Source == observe.SourceLease
	}
	if !leased {
		t.Fatal("ten requests at once took no lease")
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	policy.Lease = 0
	plain := mustNew(t, ratelimit.NewRedisStore(redistest.Standalone(t), ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix)), policy)
	if d := allow(t, plain, "tenant", 0); d.Remaining != 990 {
		t.Errorf("after Close, Redis has %d left of 1000; want 990: the 10 admitted, the lease's unused units given back", d.Remaining)
	}
}

// TestRedisStoreCloseEndsItsReports: a closed store runs without nothing any more: each
// feature it reported running without is reported back, once, however often it is closed, and
// none after (a closed store kept RateLimitStoreDegraded firing).
func TestRedisStoreCloseEndsItsReports(t *testing.T) {
	clock := fakeclock.New(fakeclock.T0)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"one": redistest.Addr(t)}}) // no denial cache
	t.Cleanup(func() { ring.Close() })
	obs := &evictionSeen{}
	store := ratelimit.NewRedisStore(ring, ratelimit.WithClock(clock), ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithObserver(obs.observer()))
	l := mustNew(t, store, ratelimit.Policy{Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Second})
	for i := range 4096 + 2 { // the leases full
		allow(t, l, "user:"+strconv.Itoa(i), 1)
	}
	if got := obs.degradations(); !slices.Equal(got, []string{"denial_cache", "quota_leases"}) {
		t.Fatalf("before Close: reported %v; want [denial_cache quota_leases]", got)
	}
	for range 2 {
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = l.Allow(context.Background(), "newcomer")
	if got := obs.degradations(); !slices.Equal(got, []string{"denial_cache", "quota_leases", "-denial_cache", "-quota_leases"}) {
		t.Errorf("after Close: reported %v; want [denial_cache quota_leases -denial_cache -quota_leases]", got)
	}
}
