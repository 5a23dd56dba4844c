package ratelimit_test

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/algo"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// Two instances over one redis-server, each its own client, store and limiter, on one fake
// clock: ten concurrent requests of 100 tokens a minute, five through each, estimated at 20
// and costing 30. The holds of both count in every admission: 5 are admitted while all are
// held, and their settles, concurrent too, charge 5 × 30 = 150, the limit and one overdraft
// (what the admitted requests cost beyond their estimates, 5 × 10), no more. The overdraft
// refuses the next request until time repays it: for a TAT exactly 51 units, 30.6 s.
func TestReserveAcrossInstances(t *testing.T) {
	addr, prefix := redistest.Addr(t), redistest.Prefix(t)
	checker := redistest.Standalone(t)
	t.Cleanup(func() { assertAllKeysExpire(t, checker, prefix) })
	reserveAcrossInstances(t, prefix, func() redis.UniversalClient { return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 10}) })
}

// The same through Sentinel: each instance's client finds the primary through the Sentinel.
func TestReserveAcrossInstancesSentinel(t *testing.T) {
	g := redistest.Sentinel(t)
	reserveAcrossInstances(t, redistest.Prefix(t), func() redis.UniversalClient {
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: g.MasterName, SentinelAddrs: g.SentinelAddrs, PoolSize: 10})
	})
}

// reserveAcrossInstances runs the case on two instances, each with a client of its own
// that newClient makes, keys under prefix.
func reserveAcrossInstances(t *testing.T, prefix string, newClient func() redis.UniversalClient) {
	clock := newFakeClock()
	const limit, estimate, actual, requests = 100, 20, 30, 10
	for _, alg := range holdable {
		t.Run(alg.Name(), func(t *testing.T) {
			clock.Set(t0)
			policy := ratelimit.Policy{Name: "tokens", Limit: limit, Window: time.Minute, Algorithm: alg}
			var instances [2]*ratelimit.Limiter
			for i := range instances {
				client := newClient()
				t.Cleanup(func() { client.Close() })
				instances[i] = mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithClock(clock)), policy)
			}
			key := keyOf(t)
			decisions := make([]ratelimit.Decision, requests)
			concurrently(t, requests, func(i int) error {
				var err error
				decisions[i], err = instances[i%2].Reserve(ctx, key, estimate)
				return err
			})
			admitted := 0
			for _, d := range decisions {
				if d.Allowed {
					admitted++
				}
			}
			if admitted != limit/estimate {
				t.Fatalf("%d of %d concurrent reservations of %d admitted against %d across two instances, want %d", admitted, requests, estimate, limit, limit/estimate)
			}
			concurrently(t, requests, func(i int) error { return instances[i%2].Settle(ctx, key, decisions[i], actual) })
			d := allow(t, instances[0], key, 1)
			if d.Allowed {
				t.Fatal("a request after the overdraft admitted")
			}
			// What the limit and one overdraft, 150, refuse: a TAT, until 51 units came back
			// at 0.6 s each; the sliding counter, into the next window until
			// 150·(1 - e/60 s) + 1 ≤ 100, e = 20.4 s; the fixed window and the log, to the
			// window's end. The first two tell 150 from any other total, so measure it.
			charged := int64(limit + admitted*(actual-estimate))
			want := time.Minute
			switch {
			case algo.Of(alg).UsesBurst():
				want = time.Duration(charged-limit+1) * 600 * time.Millisecond
			case algo.Of(alg).Code() == "sc":
				want = time.Minute + time.Duration(float64(time.Minute)*(1-float64(limit-1)/float64(charged)))
			}
			if d.RetryAfter != want {
				t.Fatalf("after the settles: RetryAfter %v, want %v (%d charged)", d.RetryAfter, want, charged)
			}
			clock.Advance(d.RetryAfter)
			if !allow(t, instances[1], key, 1).Allowed {
				t.Fatalf("a request at its Retry-After (%v) denied", d.RetryAfter)
			}
		})
	}
}

// concurrently runs f(0) … f(n-1) at once, each in a goroutine of its own, and fails the test
// on the first error.
func concurrently(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	wg.Add(n)
	for i := range n {
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
}

// An instance killed with SIGKILL after a Reserve, before its Settle, leaves its hold in
// Redis: the hold counts in every admission until its lifetime ends (the shortest window, a
// minute here), and then the next reservation gives it back whole: the capacity is back, and
// the killed request charged nothing (the hour's policy, which time has not refilled, shows
// it). The child is this test binary, in TestReserveChildDies; both run on fake clocks at t0
// (the script is given the time), so the lifetime ends when this test says.
func TestReserveKilledInstance(t *testing.T) {
	cmd, lines, prefix := startChild(t, "TestReserveChildDies")
	var err error
	held := int64(-1)
	for held < 0 && lines.Scan() {
		if n, ok := strings.CutPrefix(lines.Text(), "reserved "); ok {
			if held, err = strconv.ParseInt(n, 10, 64); err != nil {
				t.Fatalf("the child said %q", lines.Text())
			}
		}
	}
	if held != 50 {
		t.Fatalf("the child held %d (%v), want 50", held, lines.Err())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred call, no Settle
		t.Fatal(err)
	}
	_ = cmd.Wait()
	clock := fakeclock.New(fakeclock.T0)
	client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { client.Close() })
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix), ratelimit.WithClock(clock)), killedPolicies...)
	remaining := func() (minute, hour int64) {
		t.Helper()
		settle(t, l, "victim", reserve(t, l, "victim", 1), 0) // gives back the expired holds
		r := allow(t, l, "victim", 0).Results()
		return r[0].Remaining, r[1].Remaining
	}
	if m, h := remaining(); m != 50 || h != 950 {
		t.Fatalf("after the kill, within the hold's lifetime: %d and %d remaining, want 50 and 950", m, h)
	}
	clock.Advance(time.Minute - time.Microsecond)
	if _, h := remaining(); h != 950 {
		t.Fatalf("1 µs before the hold's lifetime ends: %d remaining of the hour's 1000, want 950", h)
	}
	clock.Advance(time.Microsecond)
	if m, h := remaining(); m != 100 || h != 1000 {
		t.Fatalf("when the hold's lifetime ended: %d and %d remaining, want 100 and 1000: the killed request charged something", m, h)
	}
}

// killedPolicies are the killed instance's: its hold lives a minute, the shortest window, and
// the hour's policy keeps what it charged longer than that.
var killedPolicies = []ratelimit.Policy{
	{Name: "minute", Limit: 100, Window: time.Minute, Algorithm: algorithms.FixedWindow{}},
	{Name: "hour", Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}},
}

// TestReserveChildDies is the instance TestReserveKilledInstance kills: it reserves an
// estimate of 80 (held: 50, half the least capacity), says so, and waits to be killed.
func TestReserveChildDies(t *testing.T) {
	addr := os.Getenv("RATELIMIT_CHILD_REDIS")
	if addr == "" {
		t.Skip("run by TestReserveKilledInstance")
	}
	client := redis.NewClient(&redis.Options{Addr: addr})
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(os.Getenv("RATELIMIT_CHILD_PREFIX")), ratelimit.WithClock(fakeclock.New(fakeclock.T0)))
	d := reserve(t, mustNew(t, store, killedPolicies...), "victim", 80)
	if !d.Allowed {
		t.Fatal("the child's reservation denied")
	}
	os.Stdout.WriteString("reserved " + strconv.FormatInt(d.Cost, 10) + "\n")
	select {}
}
