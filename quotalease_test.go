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
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// callCount is a go-redis hook that counts the commands a client sends.
type callCount struct{ n atomic.Int64 }

func (c *callCount) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *callCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(calls(cmd))
		return next(ctx, cmd)
	}
}
func (c *callCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.n.Add(calls(cmd))
		}
		return next(ctx, cmds)
	}
}

// calls is how many calls of the store cmd carries: the checks of a merged call (see package
// internal/rediscall), each counted as the call it would be alone; else one.
func calls(cmd redis.Cmder) int64 {
	args := cmd.Args()
	if fn, ok := args[1].(string); ok && cmd.Name() == "fcall" && strings.HasSuffix(fn, "_many") {
		return int64(args[3+args[2].(int)].(int))
	}
	return 1
}

// TestLeasesKeepTheFleetExact: four instances, 64 goroutines each, on one identity of a
// leasing fixed window (40,000 a second, leases of 20 ms), asking 51,200 a second between
// them. On a clock the test moves 5 ms at a time (every goroutine asks once per step), the
// fleet admits at most the limit in every window, the instances call Redis for at most one
// check in 20, most admissions come from leases, and when the leases end their unused units
// are given back: Redis's count is then what was admitted.
func TestLeasesKeepTheFleetExact(t *testing.T) {
	for _, e := range []struct {
		name   string
		client func(t *testing.T) redis.UniversalClient
	}{
		{"redis", func(t *testing.T) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
		}},
		{"cluster", func(t *testing.T) redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Clone(redistest.Cluster(t).Options().Addrs)})
		}},
	} {
		t.Run(e.name, func(t *testing.T) {
			const (
				instances, goroutines = 4, 64
				limit                 = 40_000
				step                  = 5 * time.Millisecond
				windows               = 2
			)
			policy := ratelimit.Policy{Name: "hot", Limit: limit, Window: time.Second, Algorithm: algorithms.FixedWindow{}, Lease: 20 * time.Millisecond}
			clock := newFakeClock()
			prefix := redistest.Prefix(t)
			ctx := context.Background()
			calls := &callCount{}
			limiters := make([]*ratelimit.Limiter, instances)
			for i := range limiters {
				c := e.client(t)
				t.Cleanup(func() { _ = c.Close() })
				c.AddHook(calls)
				limiters[i] = mustNew(t, ratelimit.NewRedisStore(c, ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix)), policy)
			}
			var admitted [windows]atomic.Int64
			var checks, leased atomic.Int64
			for w := range windows {
				for range time.Second / step {
					var wg sync.WaitGroup
					for _, l := range limiters {
						for range goroutines {
							wg.Add(1)
							go func() {
								defer wg.Done()
								d, err := l.Allow(ctx, "tenant")
								if err != nil {
									t.Error(err)
									return
								}
								checks.Add(1)
								if d.Allowed {
									admitted[w].Add(1)
									if d.Source == observe.SourceLease {
										leased.Add(1)
									}
								}
							}()
						}
					}
					wg.Wait()
					clock.Advance(step)
				}
			}
			n := checks.Load()
			for w := range windows {
				if got := admitted[w].Load(); got > limit || got < limit*9/10 {
					t.Errorf("window %d: %d admitted; want at most %d, and near it (the demand is above it)", w, got, limit)
				}
			}
			if c := calls.n.Load(); c*20 > n {
				t.Errorf("%d Redis calls for %d checks; want at most one in 20", c, n)
			}
			if l := leased.Load(); l*2 < admitted[0].Load()+admitted[1].Load() {
				t.Errorf("%d admissions from leases of %d; want most", l, admitted[0].Load()+admitted[1].Load())
			}
			t.Logf("%d checks, %d Redis calls, admitted %d and %d, %d from leases", n, calls.n.Load(), admitted[0].Load(), admitted[1].Load(), leased.Load())

			// A third window, half used: when the leases end, what they did not hand out goes
			// back, and the count in Redis is what the fleet admitted.
			var third atomic.Int64
			for range 3 {
				var wg sync.WaitGroup
				for _, l := range limiters {
					for range goroutines {
						wg.Add(1)
						go func() {
							defer wg.Done()
							if d, err := l.Allow(ctx, "tenant"); err == nil && d.Allowed {
								third.Add(1)
							}
						}()
					}
				}
				wg.Wait()
				clock.Advance(step)
			}
			plain := mustNew(t, ratelimit.NewRedisStore(e.client(t), ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix)),
				ratelimit.Policy{Name: "hot", Limit: limit, Window: time.Second, Algorithm: algorithms.FixedWindow{}})
			var left int64
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				d, err := plain.AllowN(ctx, "tenant", 0)
				if err != nil {
					t.Fatal(err)
				}
				if left = d.Remaining; left == limit-third.Load() {
					break
				}
			}
			if left != limit-third.Load() {
				t.Errorf("after the leases ended, Redis has %d left of %d; want %d: the %d admitted, the unused units given back", left, limit, limit-third.Load(), third.Load())
			}
		})
	}
}

// TestLeaseIsRefused: New says why a policy cannot lease.
func TestLeaseIsRefused(t *testing.T) {
	store := ratelimit.NewMemoryStore()
	fw := ratelimit.Policy{Name: "a", Limit: 10, Window: time.Second, Algorithm: algorithms.FixedWindow{}, Lease: 20 * time.Millisecond}
	for _, c := range []struct {
		policies []ratelimit.Policy
		want     string
	}{
		{[]ratelimit.Policy{{Limit: 10, Window: time.Second, Lease: 20 * time.Millisecond}}, "only a fixed_window policy can lease"},
		{[]ratelimit.Policy{{Limit: 10, Window: time.Second, Algorithm: algorithms.FixedWindow{}, Lease: time.Second}}, "must be shorter than the Window"},
		{[]ratelimit.Policy{{Limit: 10, Window: time.Second, Algorithm: algorithms.FixedWindow{}, Lease: -1}}, "must be positive"},
		{[]ratelimit.Policy{fw, {Name: "b", Limit: 100, Window: time.Minute, Algorithm: algorithms.FixedWindow{}}}, "1 of the 2 policies set Lease"},
	} {
		if _, err := ratelimit.New(store, c.policies...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v; want an error saying %q", c.policies, err, c.want)
		}
	}
	if _, err := ratelimit.New(store, fw, ratelimit.Policy{Name: "b", Limit: 100, Window: time.Minute, Algorithm: algorithms.FixedWindow{}, Lease: 50 * time.Millisecond}); err != nil {
		t.Errorf("two leasing fixed windows: %v", err)
	}
}

// TestLeaseEndsWithItsWindow: units leased in one fixed window are never spent in the next.
// A hot identity takes a lease 10 ms before its window ends, with 50 ms of Lease left; the
// next window still admits exactly its limit.
func TestLeaseEndsWithItsWindow(t *testing.T) {
	clock := newFakeClock()
	ctx := context.Background()
	l := mustNew(t, ratelimit.NewRedisStore(redistest.Standalone(t), ratelimit.WithClock(clock), ratelimit.WithPrefix(redistest.Prefix(t))),
		ratelimit.Policy{Name: "w", Limit: 100, Window: time.Second, Algorithm: algorithms.FixedWindow{}, Lease: 50 * time.Millisecond})
	clock.Advance(990 * time.Millisecond)
	leased := false
	for range 3 { // the second takes a lease of 4 units: 2 are left when the window ends
		d, err := l.Allow(ctx, "k")
		if err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
		leased = leased || d.Source == observe.SourceLease
	}
	if !leased {
		t.Fatal("three requests at once took no lease")
	}
	clock.Advance(10 * time.Millisecond) // the next window
	admitted := 0
	for range 200 {
		d, err := l.Allow(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	if admitted != 100 {
		t.Errorf("the next window admitted %d; want its limit, 100, and no unit leased before it", admitted)
	}
}

// TestLeaseRefundFailureIsLogged: when Redis is gone as a lease ends, its unused units cannot
// be given back; the store says so in a warning (at most one a second), with the cause.
func TestLeaseRefundFailureIsLogged(t *testing.T) {
	addr := redistest.Private(t)
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	var buf syncBuffer
	clock := newFakeClock()
	ctx := context.Background()
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithClock(clock), ratelimit.WithBreaker(0, 0),
		ratelimit.WithLogger(slog.New(slog.NewTextHandler(&buf, nil)))),
		ratelimit.Policy{Name: "w", Limit: 100, Window: time.Second, Algorithm: algorithms.FixedWindow{}, Lease: 50 * time.Millisecond})
	for range 2 { // the second takes a lease, and leaves units unused
		if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
	}
	_ = redis.NewClient(&redis.Options{Addr: addr}).Shutdown(ctx).Err() // the server exits
	clock.Advance(60 * time.Millisecond)
	_, _ = l.Allow(ctx, "k") // ends the lease; its refund fails
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(buf.String(), "could not be given back") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := buf.String(); !strings.Contains(got, "a lease's unused units could not be given back") || !strings.Contains(got, "connection refused") {
		t.Errorf("logged %q; want the failed refund and its cause", got)
	}
}

// TestLeaseDenialCostsNoCall: once Redis has refused a hot identity's lease and its request,
// the leasing layer answers that identity's requests itself until the exact Retry-After (the
// end of the fixed window), with no call to Redis, and the first request after it goes to
// Redis and is admitted. A refund announced meanwhile would end the denial (see
// TestDenialCacheHearsTheFleet), which is why the store answers denials only while it hears.
func TestLeaseDenialCostsNoCall(t *testing.T) {
	clock := newFakeClock()
	ctx := context.Background()
	calls := &callCount{}
	client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { _ = client.Close() })
	client.AddHook(calls)
	store := ratelimit.NewRedisStore(client, ratelimit.WithClock(clock), ratelimit.WithPrefix(redistest.Prefix(t)))
	waitHearing(t, store)
	l := mustNew(t, store, ratelimit.Policy{Name: "w", Limit: 10, Window: time.Second, Algorithm: algorithms.FixedWindow{}, Lease: 50 * time.Millisecond})
	var last ratelimit.Decision
	for i := 0; ; i++ {
		d, err := l.Allow(ctx, "hot")
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed {
			last = d
			break
		}
		if i > 10 {
			t.Fatal("11 requests admitted under a limit of 10")
		}
	}
	// The lease the admitted requests spent ends in the background, one call, as does the
	// store's first read of the eviction policy: on a busy machine either may land later.
	ratelimit.SettleBackground(store)
	before := calls.n.Load()
	for range 1000 {
		clock.Advance(last.RetryAfter / 2000)
		d, err := l.Allow(ctx, "hot")
		if err != nil || d.Allowed || d.Source != observe.SourceLease {
			t.Fatalf("%+v, %v; want denied by the leasing layer", d, err)
		}
	}
	if n := calls.n.Load() - before; n != 0 {
		t.Errorf("1,000 requests of a denied identity within its Retry-After made %d Redis calls; want 0", n)
	}
	clock.Advance(last.RetryAfter) // past the window's end
	if d, err := l.Allow(ctx, "hot"); err != nil || !d.Allowed {
		t.Fatalf("after the Retry-After: %+v, %v; want admitted", d, err)
	}
	if n := calls.n.Load() - before; n == 0 {
		t.Error("the request after the Retry-After made no Redis call")
	}
}

// When the leases track as many identities as they may (4,096 seen within their lease's
// time), a new identity goes to Redis without one: the store says so, once, in its log and to
// its observer (quota_leases), and again when there is room once more. It had been silent.
func TestLeasesFullReported(t *testing.T) {
	clock := fakeclock.New(fakeclock.T0)
	obs := &evictionSeen{}
	var logged syncBuffer
	store := ratelimit.NewRedisStore(redistest.Standalone(t), ratelimit.WithClock(clock), ratelimit.WithPrefix(redistest.Prefix(t)),
		ratelimit.WithObserver(obs.observer()), ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	l := mustNew(t, store, ratelimit.Policy{Limit: 10, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Second})
	for i := range 4096 + 2 {
		allow(t, l, "user:"+strconv.Itoa(i), 1)
	}
	if got := obs.degradations(); !slices.Equal(got, []string{"quota_leases"}) {
		t.Errorf("4,098 identities within a lease's time: reported %v; want [quota_leases]", got)
	}
	// Churn: identities come and go, each sweep reclaiming a few entries and the next
	// newcomers turned away again. Nothing flaps (it did: a report and a log line each way
	// for every reclaimed entry, and the gauge read 0 half the time).
	for i := range 50 {
		clock.Advance(100 * time.Millisecond)
		allow(t, l, "churn:"+strconv.Itoa(i), 1)
	}
	if got := obs.degradations(); !slices.Equal(got, []string{"quota_leases"}) {
		t.Errorf("under churn: reported %v; want [quota_leases] only", got)
	}
	clock.Advance(2 * time.Minute) // every identity idle, none turned away for a minute
	allow(t, l, "newcomer", 1)
	if got := obs.degradations(); !slices.Equal(got, []string{"quota_leases", "-quota_leases"}) {
		t.Errorf("once the identities are idle: reported %v; want [quota_leases -quota_leases]", got)
	}
	if n := strings.Count(logged.String(), "the quota leases track as many identities as they may"); n != 1 {
		t.Errorf("logged the full leases %d times; want once:\n%s", n, logged.String())
	}
	if !strings.Contains(logged.String(), "the quota leases have room again") {
		t.Errorf("no line of the leases having room again:\n%s", logged.String())
	}
}

// TestLeasesFullEndsWithoutANewcomer: once the leases are full, the identities they track keep
// coming and no new one is turned away: the store says it has room again a minute after the
// last was (it said so only when a new identity was tracked, so the gauge stayed at 1).
func TestLeasesFullEndsWithoutANewcomer(t *testing.T) {
	clock := fakeclock.New(fakeclock.T0)
	obs := &evictionSeen{}
	store := ratelimit.NewRedisStore(redistest.Standalone(t), ratelimit.WithClock(clock), ratelimit.WithPrefix(redistest.Prefix(t)),
		ratelimit.WithObserver(obs.observer()))
	l := mustNew(t, store, ratelimit.Policy{Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Second})
	for i := range 4096 + 2 {
		allow(t, l, "user:"+strconv.Itoa(i), 1)
	}
	if got := obs.degradations(); !slices.Equal(got, []string{"quota_leases"}) {
		t.Fatalf("4,098 identities within a lease's time: reported %v; want [quota_leases]", got)
	}
	for range 600 { // a tracked identity's traffic alone, for ten minutes
		clock.Advance(time.Second)
		allow(t, l, "user:0", 1)
	}
	if got := obs.degradations(); !slices.Equal(got, []string{"quota_leases", "-quota_leases"}) {
		t.Errorf("none turned away for ten minutes: reported %v; want [quota_leases -quota_leases]", got)
	}
}

// TestLeaseCheckWithoutAnswerIsLogged: a check that would take a lease and gets no answer in
// time may still have run in Redis, charging the lease's units; they then stay charged until
// their window ends (fewer admitted, never more), and the store says so, naming them (it said
// nothing).
func TestLeaseCheckWithoutAnswerIsLogged(t *testing.T) {
	proxy := faultproxy.Start(t, redistest.Addr(t))
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	var buf syncBuffer
	clock := newFakeClock()
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithClock(clock), ratelimit.WithBreaker(0, 0), ratelimit.WithDenialCache(0),
		ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithLogger(slog.New(slog.NewTextHandler(&buf, nil)))),
		ratelimit.Policy{Name: "w", Limit: 1000, Window: time.Hour, Algorithm: algorithms.FixedWindow{}, Lease: time.Minute})
	if d, err := l.Allow(context.Background(), "k"); err != nil || !d.Allowed { // not hot yet: a call of its own
		t.Fatalf("%+v, %v", d, err)
	}
	proxy.Delay(time.Hour) // every reply from now on is held back
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.Allow(ctx, "k"); err == nil { // hot: it takes a lease, and gets no answer
		t.Fatal("a check without an answer succeeded")
	}
	if got := buf.String(); !strings.Contains(got, "a lease's check got no answer") || !strings.Contains(got, "units=") {
		t.Errorf("logged %q; want that the lease's units may stay charged, and how many", got)
	}
}
