package ratelimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// hookCounts counts the calls of each hook of an Observer, by the hook's field name.
type hookCounts map[string]*atomic.Int64

// counting returns an Observer whose hooks named in only (every hook when only is empty)
// count their calls into the counts it returns; the others are nil.
func counting(only ...string) (*ratelimit.Observer, hookCounts) {
	o, counts := &ratelimit.Observer{}, hookCounts{}
	v := reflect.ValueOf(o).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if len(only) > 0 && !contains(only, name) {
			continue
		}
		n := new(atomic.Int64)
		counts[name] = n
		f := v.Field(i)
		f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value {
			n.Add(1)
			return nil
		}))
	}
	return o, counts
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// everyEvent drives the paths that fire every event into o: a memory store at its bound, a
// key fallback, a request holding an in-flight slot while another waits for it in the queue,
// a shaping wait, an outage of a Redis store with a breaker and a local fallback, a Redis
// store with a denial cache, and a store over a Ring (no denial cache: degraded). It returns
// once each hook of counts has been called as often as want says (some are called on the
// stores' own goroutines).
func everyEvent(t *testing.T, o *ratelimit.Observer, counts hookCounts, want map[string]int64) {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	clock := newFakeClock()
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})

	// A memory store of one identity a shard, flooded with fresh ones: the first of each shard
	// is kept, each one after it is decided on the overflow quota (MemoryStoreFull).
	full := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithMaxKeys(64),
		ratelimit.WithLogger(quiet), ratelimit.WithObserver(o)), ratelimit.Policy{Limit: 1, Window: time.Hour})
	for i := range 64 * 40 {
		if _, err := full.Allow(ctx, fmt.Sprint("id", i)); err != nil {
			t.Fatal(err)
		}
	}

	// A guard keyed by a header a request does not send (KeyFellBack), with an in-flight slot
	// (SlotHeld): while the first request holds it, a second waits for it in the queue (Queued)
	// until WaitForSlot's wait ends, and is refused.
	mem := ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithLogger(quiet), ratelimit.WithObserver(o))
	slots := mustNew(t, mem, ratelimit.Policy{Name: "slot", Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	var inner int
	var h http.Handler
	h = ratelimit.Middleware(slots, ratelimit.WithKey(ratelimit.KeyByHeader("X-Key")), ratelimit.WaitForSlot(50*time.Millisecond))(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			if inner == 0 {
				inner++
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
				inner = w.Code
			}
		}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	if inner != http.StatusTooManyRequests {
		t.Fatalf("the request waiting for the held slot: %d; want 429 after its wait", inner)
	}
	// A shaping policy delays its second request (Queued).
	shaped := mustNew(t, mem, ratelimit.Policy{Name: "shaped", Limit: 10, Window: time.Second, Burst: 5,
		Algorithm: algorithms.LeakyBucket{Shaping: true}})
	hs := ratelimit.Middleware(shaped)(ok)
	for range 2 {
		hs.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}

	// A worker's reservation, settled (Held: taken, then settled).
	tokens := mustNew(t, mem, ratelimit.Policy{Name: "tokens", Limit: 100, Window: time.Minute})
	d, err := tokens.Reserve(ctx, "worker", 20)
	if err != nil || !d.Allowed {
		t.Fatalf("Reserve: %v, %v", d.Allowed, err)
	}
	if err := tokens.Settle(ctx, "worker", d, 30); err != nil {
		t.Fatal(err)
	}

	// An outage: a Redis that refuses connections, behind a breaker that opens at the first
	// refusal, with a local fallback deciding meanwhile (StoreFailed, BreakerChanged).
	refused := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { refused.Close() })
	down := mustNew(t, ratelimit.NewRedisStore(refused, ratelimit.WithClock(clock), ratelimit.WithBreaker(1, time.Minute),
		ratelimit.WithFallback(1), ratelimit.WithDenialCache(0), ratelimit.WithLogger(quiet), ratelimit.WithObserver(o)),
		ratelimit.Policy{Limit: 2, Window: time.Hour})
	hd := ratelimit.Middleware(down, ratelimit.WithErrorHandler(func(ratelimit.Request, error) {}))(ok)
	for range 4 {
		hd.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}

	// A Redis store with a denial cache: deaf until it has subscribed (DenialCacheDeaf), and
	// the servers' maxmemory-policy read (RedisEvictionPolicy).
	client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { client.Close() })
	up := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithLogger(quiet), ratelimit.WithObserver(o))
	waitHearing(t, up)

	// A store over a Ring, which cannot hear every server: no denial cache (StoreDegraded).
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"one": redistest.Addr(t)}})
	t.Cleanup(func() { ring.Close() })
	ratelimit.NewRedisStore(ring, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithLogger(quiet), ratelimit.WithObserver(o))

	// The reports made on the stores' goroutines (the maxmemory-policy reads, the denial
	// cache's subscription): wait until each hook counted has been called want times.
	for name, n := range counts {
		for deadline := time.Now().Add(10 * time.Second); n.Load() < want[name]; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d calls after 10 s; want %d", name, n.Load(), want[name])
			}
		}
	}
}

// An Observer with one hook set, every other nil, survives the paths that fire every event:
// no panic, and its hook is called as often as when every hook is set, which is what the paths
// make: 64×40 fresh identities over 64 shards of one (all but the first of each shard
// overflow); two requests without their key, the inner one waiting for the outer's slot; eight
// requests answered (two of the slot's guard, two shaped, four in the outage), two waits (the
// slot's, the second shaped request's) each entered and left; the outage's four failures, the
// breaker opening once; one denial cache deaf then hearing; a worker's hold taken and settled; two maxmemory-policies read (the
// refused store's read is retried later, on its clock, which stands still); a Ring degraded.
func TestObserverOfOneHook(t *testing.T) {
	script := map[string]int64{"Answered": 8, "BreakerChanged": 1, "DenialCacheDeaf": 2, "Held": 2, "KeyFellBack": 2,
		"MemoryStoreFull": 64*40 - 64, "Queued": 4, "RedisEvictionPolicy": 2, "SlotHeld": 2, "StoreDegraded": 1, "StoreFailed": 4}
	all, counts := counting()
	everyEvent(t, all, counts, script)
	want := map[string]int64{}
	for name, n := range counts {
		want[name] = n.Load()
		if w, ok := script[name]; ok && want[name] != w || want[name] == 0 {
			t.Errorf("%s: called %d times with every hook set; want %d", name, want[name], w)
		}
	}
	for name := range counts {
		t.Run(name, func(t *testing.T) {
			one, got := counting(name)
			everyEvent(t, one, got, want)
			if n := got[name].Load(); n != want[name] {
				t.Errorf("%s alone: called %d times; want %d, as with every hook set", name, n, want[name])
			}
		})
	}
}

// The zero Observer is an observer with no hook: stores given it decide as without one.
func TestObserverOfNoHook(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(&ratelimit.Observer{})), ratelimit.Policy{Limit: 1, Window: time.Hour})
	h := ratelimit.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != want {
			t.Errorf("request %d: %d; want %d", i+1, w.Code, want)
		}
	}
}
