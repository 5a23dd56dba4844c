package ratelimit_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
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

// resetPolicy is the leasing policy of the reset tests: a limit of 1,000 in an hour, leases of
// a minute (on clocks that the tests move, or never).
var resetPolicy = ratelimit.Policy{Name: "tenant", Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Minute}

// unleased is p without its lease: an instance that asks Redis for every request.
func unleased(p ratelimit.Policy) ratelimit.Policy {
	p.Lease = 0
	return p
}

// spendAll asks l for a unit until it is denied (at most n times), and returns how many it
// admitted.
func spendAll(t *testing.T, l *ratelimit.Limiter, key string, n int) int {
	t.Helper()
	admitted := 0
	for range n {
		d := allow(t, l, key, 1)
		if !d.Allowed {
			break
		}
		admitted++
	}
	return admitted
}

// leaseHolds returns how many units Redis counts for key beyond the admitted: what leases hold
// unspent (or gave back), read by an instance without leases.
func leaseHolds(t *testing.T, plain *ratelimit.Limiter, key string, admitted int) int {
	t.Helper()
	d := allow(t, plain, key, 0)
	return int(resetPolicy.Limit-d.Remaining) - admitted
}

// TestLeaseAfterARemoteReset: an instance holds a lease of a hot identity when another
// instance resets that identity. From then on the fleet admits at most the limit: the units
// the lease held unspent are not handed out on top of the new count, nor refunded into it
// (before, they were both: the fleet admitted the limit and what the lease held). It holds
// whether the leasing instance hears the reset (its subscription) or never does (a store
// without the denial cache does not subscribe), and for every layout of the state.
func TestLeaseAfterARemoteReset(t *testing.T) {
	layouts := []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
		opts   []ratelimit.RedisOption
	}{
		{"redis", func(t *testing.T) redis.UniversalClient { return redistest.Standalone(t) }, nil},
		{"redis-hash", func(t *testing.T) redis.UniversalClient { return redistest.Standalone(t) }, []ratelimit.RedisOption{ratelimit.WithHashState()}},
		{"cluster-compact", func(t *testing.T) redis.UniversalClient { return redistest.Cluster(t) }, []ratelimit.RedisOption{ratelimit.WithCompactState()}},
		{"cluster-hash-compact", func(t *testing.T) redis.UniversalClient { return redistest.Cluster(t) },
			[]ratelimit.RedisOption{ratelimit.WithHashState(), ratelimit.WithCompactState()}},
	}
	for _, layout := range layouts {
		for _, hears := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/hears=%v", layout.name, hears), func(t *testing.T) {
				clock := newFakeClock()
				prefix := redistest.Prefix(t)
				store := func(extra ...ratelimit.RedisOption) ratelimit.RedisStore {
					opts := append([]ratelimit.RedisOption{ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix)}, layout.opts...)
					s := ratelimit.NewRedisStore(layout.client(t), append(opts, extra...)...)
					t.Cleanup(func() { _ = s.Close() })
					return s
				}
				var leasingStore ratelimit.RedisStore
				if hears {
					leasingStore = store()
					waitHearing(t, leasingStore)
				} else {
					leasingStore = store(ratelimit.WithDenialCache(0))
				}
				leasing := mustNew(t, leasingStore, resetPolicy)
				plain := mustNew(t, store(), unleased(resetPolicy))
				resetter := mustNew(t, store(), unleased(resetPolicy))

				held := takeLease(t, leasing, plain)
				if err := resetter.Reset(context.Background(), "hot"); err != nil {
					t.Fatal(err)
				}
				after := admittedAfterReset(t, leasing, plain, clock, held)
				if after < int(resetPolicy.Limit)*3/4 {
					t.Errorf("after the reset the fleet admitted %d; want most of the limit, %d", after, resetPolicy.Limit)
				}
				t.Logf("the lease held %d units at the reset; the fleet admitted %d after it", held, after)
			})
		}
	}
}

// TestLeaseEndsWhenItHearsAReset: an instance that hears a reset of an identity made
// elsewhere ends its lease of it at once, without a request, and gives back what the lease
// did not hand out; its next request is not served from that lease. (It served the lease on,
// and Redis's count stayed 0 while the lease's 3 unused units were handed out.)
func TestLeaseEndsWhenItHearsAReset(t *testing.T) {
	clock := newFakeClock()
	prefix := redistest.Prefix(t)
	store := ratelimit.NewRedisStore(redistest.Standalone(t), ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix))
	t.Cleanup(func() { _ = store.Close() })
	waitHearing(t, store)
	leasing := mustNew(t, store, resetPolicy)
	plain := mustNew(t, ratelimit.NewRedisStore(redistest.Standalone(t), ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix)), unleased(resetPolicy))
	// The second request is hot: it takes a lease of 4 units (twice the 2 asked), uses 1.
	allow(t, leasing, "hot", 1)
	if d := allow(t, leasing, "hot", 1); d.Source != observe.SourceStore || leaseHolds(t, plain, "hot", 2) != 3 {
		t.Fatalf("the second request: %+v, the lease holding %d; want a lease of 4 taken, 3 unused", d, leaseHolds(t, plain, "hot", 2))
	}
	if err := plain.Reset(context.Background(), "hot"); err != nil {
		t.Fatal(err)
	}
	// Redis keeps the lease's 4 units counted until the lease ends: then its 3 unused come back.
	counted := func() int { return int(resetPolicy.Limit - allow(t, plain, "hot", 0).Remaining) }
	if n := settled(1, counted); n != 1 {
		t.Fatalf("after the reset Redis counts %d; want 1, once the lease that heard it gave back its 3 unused units", n)
	}
	if d := allow(t, leasing, "hot", 1); !d.Allowed || d.Source == observe.SourceLease {
		t.Errorf("the next request: %+v; want it admitted, and not from the lease the reset ended", d)
	}
}

// TestLeaseEndsWhenItsSubscriptionIsBack: a store whose subscription broke may have missed a
// reset; when it hears again it ends its leases, giving back their unused units (Redis kept
// them counted meanwhile, so a missed reset admitted nothing extra). The first subscription
// ends none.
func TestLeaseEndsWhenItsSubscriptionIsBack(t *testing.T) {
	clock := newFakeClock()
	addr := redistest.Private(t)
	server := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = server.Close() })
	store := ratelimit.NewRedisStore(redis.NewClient(&redis.Options{Addr: addr}), ratelimit.WithClock(clock))
	t.Cleanup(func() { _ = store.Close() })
	waitHearing(t, store)
	leasing := mustNew(t, store, resetPolicy)
	plain := mustNew(t, ratelimit.NewRedisStore(server, ratelimit.WithClock(clock), ratelimit.WithDenialCache(0)), unleased(resetPolicy))
	allow(t, leasing, "hot", 1)
	allow(t, leasing, "hot", 1) // a lease of 4 units, 1 used
	if held := leaseHolds(t, plain, "hot", 2); held != 3 {
		t.Fatalf("the lease holds %d units unused; want 3", held)
	}
	if err := server.Do(context.Background(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	counted := func() int { return int(resetPolicy.Limit - allow(t, plain, "hot", 0).Remaining) }
	if n := settled(2, counted); n != 2 {
		t.Errorf("after the subscription broke and came back Redis counts %d; want 2, the lease's unused units given back", n)
	}
}

// TestLeasesAfterAResetInAnotherProcess: four processes (this test binary, in
// TestLeaseResetChild) serve one hot identity from leases on one redis-server, and this
// process resets the identity while they hold leases, telling them nothing. From the reset
// on the fleet admits at most the limit, and once the processes have closed their stores
// Redis counts at least what they admitted.
func TestLeasesAfterAResetInAnotherProcess(t *testing.T) {
	const children = 4
	addr, prefix := redistest.Addr(t), redistest.Prefix(t)
	fleet := make([]*resetChild, children)
	for i := range fleet {
		fleet[i] = startResetChild(t, addr, prefix)
	}
	// Each takes leases.
	before := 0
	for _, c := range fleet {
		before += c.ask("burst 40")
	}
	clock := fakeclock.New(fakeclock.T0) // the children's time, which none of them moves
	plain := mustNew(t, ratelimit.NewRedisStore(redistest.Standalone(t), ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix)), unleased(resetPolicy))
	held := leaseHolds(t, plain, "hot", before)
	if held <= 0 {
		t.Fatalf("the children's leases hold no units (Redis counts %d beyond the %d admitted)", held, before)
	}
	if err := plain.Reset(context.Background(), "hot"); err != nil {
		t.Fatal(err)
	}
	// At once, the fleet asks for more than the limit, together, in rounds until two admit
	// nothing.
	after, idle := 0, 0
	for round := 0; idle < 2 && round < 100; round++ {
		var wg sync.WaitGroup
		got := make([]int, children)
		for i, c := range fleet {
			wg.Add(1)
			go func() { defer wg.Done(); got[i] = c.ask("burst 100") }()
		}
		wg.Wait()
		n := 0
		for _, g := range got {
			n += g
		}
		after += n
		if n == 0 {
			idle++
			time.Sleep(20 * time.Millisecond) // what the leases give back, if anything, lands
		} else {
			idle = 0
		}
	}
	for _, c := range fleet {
		c.ask("close")
	}
	if after > int(resetPolicy.Limit) {
		t.Errorf("after the reset the fleet admitted %d; want at most the limit, %d (the leases held %d units at the reset)", after, resetPolicy.Limit, held)
	}
	if after < int(resetPolicy.Limit)/2 {
		t.Errorf("after the reset the fleet admitted %d; want most of the limit, %d", after, resetPolicy.Limit)
	}
	if counted := int(resetPolicy.Limit - allow(t, plain, "hot", 0).Remaining); counted < after {
		t.Errorf("with the leases ended Redis counts %d; want at least the %d admitted since the reset", counted, after)
	}
	t.Logf("the leases held %d units at the reset; the fleet admitted %d after it", held, after)
}

// resetChild is a process of TestLeasesAfterAResetInAnotherProcess.
type resetChild struct {
	t   *testing.T
	in  io.Writer
	out *bufio.Scanner
}

// startResetChild starts a child on the redis-server at addr, under prefix, and waits until it
// is ready.
func startResetChild(t *testing.T, addr, prefix string) *resetChild {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeaseResetChild$")
	cmd.Env = append(os.Environ(), "RATELIMIT_LEASE_CHILD="+addr+" "+prefix, "REDIS_ADDR="+addr)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	c := &resetChild{t: t, in: in, out: bufio.NewScanner(out)}
	c.ask("ready")
	return c
}

// ask sends the child a command and returns the number it answers.
func (c *resetChild) ask(cmd string) int {
	c.t.Helper()
	fmt.Fprintln(c.in, cmd)
	for c.out.Scan() {
		if n, ok := strings.CutPrefix(c.out.Text(), "answer "); ok {
			v, err := strconv.Atoi(n)
			if err != nil {
				c.t.Fatalf("child: %q", c.out.Text())
			}
			return v
		}
	}
	c.t.Fatalf("child ended: %v", c.out.Err())
	return 0
}

// TestLeaseResetChild is a process of TestLeasesAfterAResetInAnotherProcess: a leasing instance
// on a clock at fakeclock.T0 that never moves, and a store that hears the fleet. It answers
// the commands on its standard input: "ready" (once it hears), "burst N" (N requests, one
// after the other: the number admitted), "close" (closes its store).
func TestLeaseResetChild(t *testing.T) {
	env := os.Getenv("RATELIMIT_LEASE_CHILD")
	if env == "" {
		t.Skip("run by TestLeasesAfterAResetInAnotherProcess")
	}
	addr, prefix, _ := strings.Cut(env, " ")
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	store := ratelimit.NewRedisStore(client, ratelimit.WithClock(fakeclock.New(fakeclock.T0)), ratelimit.WithPrefix(prefix))
	l := mustNew(t, store, resetPolicy)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		answer := 0
		switch cmd := in.Text(); {
		case cmd == "ready":
			waitHearing(t, store)
		case strings.HasPrefix(cmd, "burst "):
			n, _ := strconv.Atoi(strings.TrimPrefix(cmd, "burst "))
			for range n {
				d, err := l.Allow(context.Background(), "hot")
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					answer++
				}
			}
		case cmd == "close":
			_ = store.Close()
		}
		fmt.Printf("answer %d\n", answer)
	}
}

// A reset made while the identity's slot moves between two Cluster nodes keeps the leases'
// units counted too. The units a fixed window's leases hold are counted under a key of their
// own beside the state (lease_taken in fixed_window.lua), which the slot's move may leave on
// the old node after the state has gone: the reset, redirected (ASK) to the new node with
// its state, found no count there and forgot the lease's units, without an error, and the
// fleet admitted them on top of the limit. The leasing instance never hears the reset here
// (no denial cache), as one whose subscription was down.
func TestResetWhileTheSlotMoves(t *testing.T) {
	t.Parallel() // a cluster of its own, mostly waited for
	c := redistest.ClusterWithSpare(t)
	prefix := redistest.Prefix(t)
	clock := newFakeClock()
	store := func(extra ...ratelimit.RedisOption) ratelimit.RedisStore {
		client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Clone(c.Addrs), ContextTimeoutEnabled: true})
		t.Cleanup(func() { client.Close() })
		s := ratelimit.NewRedisStore(client, append([]ratelimit.RedisOption{ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix)}, extra...)...)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	leasing := mustNew(t, store(ratelimit.WithDenialCache(0)), resetPolicy)
	plain := mustNew(t, store(), unleased(resetPolicy))
	resetter := mustNew(t, store(), unleased(resetPolicy))
	held := takeLease(t, leasing, plain)
	state := ratelimit.StorageKey(prefix, "hot", resetPolicy, false)
	slot := c.Slot(t, state)
	c.BeginMove(t, slot)
	c.MoveKey(t, slot, state) // the state moved, its leases' count not yet
	done := make(chan error, 1)
	go func() {
		rc, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- resetter.Reset(rc, "hot")
	}()
	var err error
	select { // a reset that sees the keys split waits for the move (TRYAGAIN)
	case err = <-done:
		c.MoveKeys(t, slot)
		c.EndMove(t, slot)
	case <-time.After(100 * time.Millisecond):
		c.MoveKeys(t, slot)
		c.EndMove(t, slot)
		err = <-done
	}
	if err != nil {
		t.Fatal(err)
	}
	after := admittedAfterReset(t, leasing, plain, clock, held)
	t.Logf("the lease held %d units at the reset; the fleet admitted %d after it", held, after)
}

// takeLease has leasing take a lease of "hot" with 20 requests, and returns the units it holds
// unspent, read by plain.
func takeLease(t *testing.T, leasing, plain *ratelimit.Limiter) int {
	t.Helper()
	before := 0
	for range 20 {
		if allow(t, leasing, "hot", 1).Allowed {
			before++
		}
	}
	held := leaseHolds(t, plain, "hot", before)
	if held <= 0 {
		t.Fatalf("20 requests left no lease holding units (Redis counts %d beyond them)", held)
	}
	return held
}

// admittedAfterReset returns what the fleet admits of "hot" after its reset, and fails t when
// it is more than the limit: the leasing instance asks on, the plain one spends what it can,
// the lease's time ends (its refund reaches Redis after the reset), and both spend what is
// left.
func admittedAfterReset(t *testing.T, leasing, plain *ratelimit.Limiter, clock *fakeClock, held int) int {
	t.Helper()
	after := 0
	for range 30 {
		if allow(t, leasing, "hot", 1).Allowed {
			after++
		}
	}
	after += spendAll(t, plain, "hot", 2000)
	clock.Advance(2 * resetPolicy.Lease)
	after += spendAll(t, leasing, "hot", 2000)
	time.Sleep(50 * time.Millisecond) // a refund on its way lands: it must not make room
	after += spendAll(t, plain, "hot", 2000)
	if after > int(resetPolicy.Limit) {
		t.Errorf("after the reset the fleet admitted %d; want at most the limit, %d (the lease held %d units at the reset)", after, resetPolicy.Limit, held)
	}
	return after
}

// A lease taken or ended while the identity's slot moves between two Cluster nodes names the
// key of the leases' count too (see TestResetWhileTheSlotMoves). Before, a lease's check
// redirected (ASK) to the new node with the state wrote a count there while the old node still
// held one: the move then failed (MIGRATE: BUSYKEY, the count already on the new node), as
// redis-cli's reshard does, and one of the two counts was lost.
func TestLeaseWhileTheSlotMoves(t *testing.T) {
	t.Parallel() // a cluster of its own, mostly waited for
	c := redistest.ClusterWithSpare(t)
	prefix := redistest.Prefix(t)
	clock := newFakeClock()
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Clone(c.Addrs), ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	store := func(extra ...ratelimit.RedisOption) ratelimit.RedisStore {
		s := ratelimit.NewRedisStore(client, append([]ratelimit.RedisOption{ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix)}, extra...)...)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	leasing := mustNew(t, store(ratelimit.WithDenialCache(0)), resetPolicy)
	plain := mustNew(t, store(), unleased(resetPolicy))
	takeLease(t, leasing, plain)
	state := ratelimit.StorageKey(prefix, "hot", resetPolicy, false)
	slot := c.Slot(t, state)
	c.BeginMove(t, slot)
	c.MoveKey(t, slot, state) // the state moved, its leases' count not yet
	clock.Advance(2 * resetPolicy.Lease)
	done := make(chan error, 1)
	go func() { // the lease ends, and the next requests take another
		for range 20 {
			rc, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := leasing.Allow(rc, "hot")
			cancel()
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	time.Sleep(100 * time.Millisecond)
	c.MoveKeys(t, slot)
	c.EndMove(t, slot)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
