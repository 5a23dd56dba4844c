package rules

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// watching starts e.WatchRedis on key with client until the test ends, and returns once it
// has subscribed and caught up. subscribed receives a value at every (re)subscription.
func watching(t *testing.T, e *Engine, client redis.UniversalClient, key string, subscribed chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.WatchRedis(ctx, client, key) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchRedis: %v", err)
		}
	})
	select {
	case <-subscribed:
	case <-time.After(30 * time.Second):
		t.Fatal("WatchRedis did not subscribe in 30 s")
	}
}

// signal is the option that sends on subscribed each time a watcher is subscribed, without
// waiting for a reader.
func signal(subscribed chan struct{}) Option {
	return whenStarted(func() {
		select {
		case subscribed <- struct{}{}:
		default:
		}
	})
}

// redisEngine returns an engine over the memory store applying set, reporting to rep; its
// watcher polls only once an hour, so a change can only come through the channel or a
// resubscription.
func redisEngine(t *testing.T, set *Set, rep *reporter, subscribed chan struct{}) *Engine {
	t.Helper()
	e, err := NewEngine(ratelimit.NewMemoryStore(), set, WithReporter(rep), WithLogger(slog.New(slog.DiscardHandler)),
		byPlan(), WithPollInterval(time.Hour), signal(subscribed))
	if err != nil {
		t.Fatal(err)
	}
	rep.next(t) // its first version
	return e
}

// TestWatchRedis: a pushed version is applied when it is announced; a stored document that
// does not parse is reported once and the last good rules stay; the next good push applies.
func TestWatchRedis(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient) {
		key := redistest.Prefix(t) + "rules"
		if _, err := Push(t.Context(), client, key, "limits.yaml", limitsDoc("v1", 2, 5)); err != nil {
			t.Fatal(err)
		}
		rep, subscribed := newReporter(), make(chan struct{}, 1)
		e, err := OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key, WithReporter(rep),
			WithLogger(slog.New(slog.DiscardHandler)), byPlan(), WithPollInterval(time.Hour),
			signal(subscribed))
		if err != nil {
			t.Fatal(err)
		}
		if ev := rep.next(t); ev != "applied v1" {
			t.Fatalf("OpenRedis: %q, want v1 applied", ev)
		}
		watching(t, e, client, key, subscribed)

		if _, err := Push(t.Context(), client, key, "limits.yaml", limitsDoc("v2", 3, 5)); err != nil {
			t.Fatal(err)
		}
		if ev := rep.next(t); ev != "applied v2" || e.Version() != "v2" {
			t.Fatalf("after a push: %q, version %q; want v2 applied", ev, e.Version())
		}
		if w := serve(e, "GET", "/", "a", ""); w.Header().Get("X-RateLimit-Limit") != "3" {
			t.Errorf("under v2: limit %q, want 3", w.Header().Get("X-RateLimit-Limit"))
		}

		// A document this instance cannot parse (written by hand here; Push would refuse it).
		bad := strings.Replace(string(limitsDoc("v3", 4, 5)), "limit: 4", "limit: four", 1)
		if err := client.HSet(t.Context(), key, "version", "v3", "document", bad).Err(); err != nil {
			t.Fatal(err)
		}
		if err := client.Publish(t.Context(), key, "v3").Err(); err != nil {
			t.Fatal(err)
		}
		if ev := rep.next(t); !strings.HasPrefix(ev, "rejected rules: the document at Redis key") || !strings.Contains(ev, `limits.yaml:6: rules[0].policies[0].limit: want an integer, got "four"`) {
			t.Errorf("a bad document: %q, want its error with its line", ev)
		}
		if err := client.Publish(t.Context(), key, "v3").Err(); err != nil { // announced again
			t.Fatal(err)
		}
		if _, err := Push(t.Context(), client, key, "limits.yaml", limitsDoc("v4", 5, 5)); err != nil {
			t.Fatal(err)
		}
		if ev := rep.next(t); ev != "applied v4" {
			t.Errorf("after the bad document and a good push: %q, want v4 applied (the bad one reported once)", ev)
		}
	})
}

// TestWatchRedisCatchesUp: an instance cut off from Redis while the rules change applies them
// as soon as it is back, without waiting for its poll.
func TestWatchRedisCatchesUp(t *testing.T) {
	direct := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	if _, err := Push(t.Context(), direct, key, "limits.yaml", limitsDoc("v1", 2, 5)); err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.Start(t, redistest.Addr(t))
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	set, _ := Parse("limits.yaml", limitsDoc("v1", 2, 5))
	rep, subscribed := newReporter(), make(chan struct{}, 1)
	e := redisEngine(t, set, rep, subscribed)
	watching(t, e, client, key, subscribed)

	proxy.Refuse() // the subscription breaks; v2 is pushed meanwhile, unheard
	if _, err := Push(t.Context(), direct, key, "limits.yaml", limitsDoc("v2", 3, 5)); err != nil {
		t.Fatal(err)
	}
	if e.Version() != "v1" {
		t.Fatalf("cut off, the instance has %q; the test needs it to miss v2", e.Version())
	}
	if err := proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	for {
		ev := rep.next(t)
		if ev == "applied v2" {
			break
		}
		if !strings.HasPrefix(ev, "rejected ") { // reading may fail while the proxy refuses
			t.Fatalf("after reconnecting: %q, want v2 applied", ev)
		}
	}
}

// TestFleetAppliesPush: 50 instances, each with its own connection, watch the rules; one push
// reaches every one of them through the channel (their polls are an hour away). The time
// from the push until the last applied it is logged, not asserted: it is a figure of the
// machine.
func TestFleetAppliesPush(t *testing.T) {
	onRedis(t, func(t *testing.T, client redis.UniversalClient) {
		key := redistest.Prefix(t) + "rules"
		if _, err := Push(t.Context(), client, key, "limits.yaml", limitsDoc("v1", 2, 5)); err != nil {
			t.Fatal(err)
		}
		const instances = 50
		set, _ := Parse("limits.yaml", limitsDoc("v1", 2, 5))
		var (
			mu      sync.Mutex
			applied = make(chan time.Time, instances)
		)
		for i := range instances {
			rep, subscribed := newReporter(), make(chan struct{}, 1)
			e := redisEngine(t, set, rep, subscribed)
			watching(t, e, instanceClient(t, client), key, subscribed)
			go func() {
				for ev := range rep.events {
					if ev == "applied v2" {
						applied <- time.Now()
						return
					}
					mu.Lock()
					t.Errorf("instance %d: %q", i, ev)
					mu.Unlock()
				}
			}()
		}
		start := time.Now()
		if _, err := Push(t.Context(), client, key, "limits.yaml", limitsDoc("v2", 3, 5)); err != nil {
			t.Fatal(err)
		}
		var took []time.Duration
		for range instances {
			select {
			case at := <-applied:
				took = append(took, at.Sub(start))
			case <-time.After(30 * time.Second):
				t.Fatalf("%d of %d instances applied the push in 30 s", len(took), instances)
			}
		}
		slices.Sort(took)
		t.Logf("%d instances applied the push: median %v, slowest %v", instances, took[len(took)/2], took[len(took)-1])
	})
}

// instanceClient returns a client of its own to the server or Cluster of client, as another
// instance would have.
func instanceClient(t *testing.T, client redis.UniversalClient) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	switch cc := client.(type) {
	case *redis.Client:
		c = redis.NewClient(&redis.Options{Addr: cc.Options().Addr, PoolSize: 2})
	case *redis.ClusterClient:
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Clone(cc.Options().Addrs), PoolSize: 2})
	default:
		t.Fatalf("unknown client %T", client)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestWatchRedisBeforeAnyPush: an instance started from a file and watching a key that holds
// no rules yet (the fleet has not pushed) keeps its rules, refuses nothing (an empty key is no
// rejected document, and the rejection alert must not fire), logs a warning once, and is in
// the fleet as soon as it is subscribed, not a heartbeat later; the first push is applied.
func TestWatchRedisBeforeAnyPush(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	path := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(path, limitsDoc("v1", 2, 5), 0o600); err != nil {
		t.Fatal(err)
	}
	logged := &lockedBuffer{}
	rep, subscribed := newReporter(), make(chan struct{}, 1)
	e, err := Open(ratelimit.NewMemoryStore(), path, WithReporter(rep), WithHeartbeat(time.Hour),
		WithLogger(slog.New(slog.NewTextHandler(logged, nil))), byPlan(), WithPollInterval(time.Hour),
		signal(subscribed))
	if err != nil {
		t.Fatal(err)
	}
	if ev := rep.next(t); ev != "applied v1" {
		t.Fatalf("Open: %q, want v1 applied", ev)
	}
	watching(t, e, client, key, subscribed)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		f, err := Fleet(t.Context(), client, key)
		if err == nil && len(f) == 1 && f[0].Running == "v1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the instance is not in the fleet 20 s after it subscribed (heartbeat 1 h): %+v, %v", f, err)
		}
	}
	if _, err := Push(t.Context(), client, key, "limits.yaml", limitsDoc("v2", 3, 5)); err != nil {
		t.Fatal(err)
	}
	if ev := rep.next(t); ev != "applied v2" {
		t.Fatalf("after the first push: %q, want v2 applied (and nothing rejected before it)", ev)
	}
	if out := logged.String(); strings.Count(out, "holds no rules") != 1 || strings.Contains(out, "level=ERROR") {
		t.Errorf("logged:\n%s\nwant one warning that the key holds no rules, and no error", out)
	}
}

// pollingThroughProxy starts an engine applying version, stored at a key of its own, and
// watching it through a fault proxy, polling every 10 ms and logging to logged: what the
// tests of a Redis that does not serve need.
func pollingThroughProxy(t *testing.T, version string, opts *redis.Options) (e *Engine, rep *reporter, proxy *faultproxy.Proxy, logged *lockedBuffer) {
	t.Helper()
	key := redistest.Prefix(t) + "rules"
	if _, err := Push(t.Context(), redistest.Standalone(t), key, "limits.yaml", limitsDoc(version, 2, 5)); err != nil {
		t.Fatal(err)
	}
	proxy = faultproxy.Start(t, redistest.Addr(t))
	opts.Addr, opts.MaxRetries = proxy.Addr(), -1
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	set, _ := Parse("limits.yaml", limitsDoc(version, 2, 5))
	rep, subscribed := newReporter(), make(chan struct{}, 1)
	logged = &lockedBuffer{}
	e, err := NewEngine(ratelimit.NewMemoryStore(), set, WithReporter(rep), WithLogger(slog.New(slog.NewTextHandler(logged, nil))),
		byPlan(), WithPollInterval(10*time.Millisecond), signal(subscribed))
	if err != nil {
		t.Fatal(err)
	}
	rep.next(t) // version
	watching(t, e, client, key, subscribed)
	return e, rep, proxy, logged
}

// noRejection waits until logged says Redis cannot be read (or that something was rejected),
// then holds that nothing was: a Redis that does not serve is no refused document.
func noRejection(t *testing.T, rep *reporter, logged *lockedBuffer) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logged.String(), "cannot read the rules from Redis") &&
		!strings.Contains(logged.String(), "rejected"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no line of Redis not serving after 20 s:\n%s", logged.String())
		}
	}
	rep.mu.Lock()
	rejected := len(rep.rejected)
	rep.mu.Unlock()
	if rejected != 0 || strings.Contains(logged.String(), "rejected") {
		t.Errorf("Redis not serving counted as %d rejected document(s); logged:\n%s", rejected, logged.String())
	}
}

// TestWatchRedisOutageIsNoRejection: Redis not answering is not a refused document. The rules
// in use stay, the log says Redis cannot be read, and nothing counts as rejected: the
// RulesRejected alert ("the document is invalid") would otherwise fire on every outage.
func TestWatchRedisOutageIsNoRejection(t *testing.T) {
	e, rep, proxy, logged := pollingThroughProxy(t, "v1", &redis.Options{ReadTimeout: 200 * time.Millisecond})
	proxy.BlackHole() // Redis stops answering: the subscription stays open, the polls time out
	noRejection(t, rep, logged)
	if e.Version() != "v1" {
		t.Errorf("the rules in use: %q; want v1 to stay", e.Version())
	}
}

// TestWatchRedisLoadingIsNoRejection: a Redis that is there but not serving (loading its
// dataset after a restart: -LOADING to every read) is no refused document either; it was
// counted as one, and the version it could not read was marked refused for good (found by a
// review).
func TestWatchRedisLoadingIsNoRejection(t *testing.T) {
	_, rep, proxy, logged := pollingThroughProxy(t, "v1.2.3", &redis.Options{})
	proxy.Rewrite("$6\r\nv1.2.3\r\n", "-LOADING x\r\n") // the stored version, read at each poll: Redis is loading
	noRejection(t, rep, logged)
}

// TestWatchRedisEachRefusalReported: two documents refused one after the other are each
// logged, with the version refused, and each counted as rejected. The second was neither
// logged nor reported (ratelimit_rules_loads_total{result="rejected"} stayed put) when it came
// before the next poll: the first had set the latch that keeps an outage to one warning, and
// only a poll cleared it. ratelimit status showed the refusal; the log and the metric did not
// (found pushing a fixed but still invalid document right after an invalid one).
func TestWatchRedisEachRefusalReported(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	if _, err := Push(t.Context(), client, key, "limits.yaml", limitsDoc("v1", 2, 5)); err != nil {
		t.Fatal(err)
	}
	logged := &lockedBuffer{}
	rep, subscribed := newReporter(), make(chan struct{}, 1)
	e, err := OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key, WithReporter(rep),
		WithLogger(slog.New(slog.NewTextHandler(logged, nil))), byPlan(), WithPollInterval(time.Hour),
		signal(subscribed))
	if err != nil {
		t.Fatal(err)
	}
	if ev := rep.next(t); ev != "applied v1" {
		t.Fatalf("OpenRedis: %q, want v1 applied", ev)
	}
	watching(t, e, client, key, subscribed)
	for _, v := range []string{"v2", "v3"} { // written by hand: Push would refuse them
		bad := strings.Replace(string(limitsDoc(v, 4, 5)), "limit: 4", "limit: four", 1)
		if err := client.HSet(t.Context(), key, "version", v, "document", bad).Err(); err != nil {
			t.Fatal(err)
		}
		if err := client.Publish(t.Context(), key, v).Err(); err != nil {
			t.Fatal(err)
		}
		// The instance records its refusal (as ratelimit status shows it) once it has read it.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if f, _ := Fleet(t.Context(), client, key); len(f) == 1 && f[0].Refused == v {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the instance did not record its refusal of %s in 20 s", v)
			}
		}
	}
	if _, err := Push(t.Context(), client, key, "limits.yaml", limitsDoc("v4", 5, 5)); err != nil {
		t.Fatal(err)
	}
	var events []string
	for ev := ""; ev != "applied v4"; {
		ev = rep.next(t)
		events = append(events, ev)
	}
	if len(events) != 3 || !strings.HasPrefix(events[0], "rejected") || !strings.HasPrefix(events[1], "rejected") {
		t.Errorf("reported: %q; want v2 rejected, v3 rejected, v4 applied", events)
	}
	out := logged.String()
	for _, v := range []string{"v2", "v3"} {
		if !strings.Contains(out, "rules rejected; the last good rules stay in use\" source=\"redis "+key+"\" version=v1 refused="+v+" ") {
			t.Errorf("logged:\n%s\nwant the refusal of %s, naming it beside v1 in use", out, v)
		}
	}
}

// TestWatchRedisSaysTheKeyIsEmptyAfterAnOutage: an instance whose subscription broke (Redis
// restarted) and whose Redis came back without the rules (a Redis that kept no data) says
// that the key holds no rules. It said nothing: the subscription's warning had set the latch
// that keeps an outage to one line, so the empty key went unsaid, and a new instance of the
// fleet would start on its default rules while this one runs the lost version.
func TestWatchRedisSaysTheKeyIsEmptyAfterAnOutage(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	if _, err := Push(t.Context(), client, key, "limits.yaml", limitsDoc("v1", 2, 5)); err != nil {
		t.Fatal(err)
	}
	logged := &lockedBuffer{}
	rep, subscribed := newReporter(), make(chan struct{}, 1)
	watcher := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), ClientName: "watcher-" + redistest.Prefix(t)})
	t.Cleanup(func() { watcher.Close() })
	e, err := OpenRedis(t.Context(), ratelimit.NewMemoryStore(), watcher, key, WithReporter(rep),
		WithLogger(slog.New(slog.NewTextHandler(logged, nil))), byPlan(), WithPollInterval(time.Hour),
		signal(subscribed))
	if err != nil {
		t.Fatal(err)
	}
	rep.next(t) // v1 applied
	watching(t, e, watcher, key, subscribed)
	if err := client.Del(t.Context(), key).Err(); err != nil {
		t.Fatal(err)
	}
	// Break the watcher's subscription, as a restart of Redis does.
	if err := client.Do(t.Context(), "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-subscribed: // subscribed again, having read the key
	case <-time.After(30 * time.Second):
		t.Fatal("the watcher did not subscribe again in 30 s")
	}
	out := logged.String()
	if !strings.Contains(out, "the subscription to Redis failed") || !strings.Contains(out, "Redis holds no rules at the key") {
		t.Errorf("logged:\n%s\nwant the subscription's failure, then that the key holds no rules", out)
	}
	if e.Version() != "v1" || strings.Contains(out, "level=ERROR") {
		t.Errorf("version %q, logged:\n%s\nwant v1 kept and nothing rejected", e.Version(), out)
	}
}
