package ratelimitotel_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/outagespec"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// Through a real Redis: a denial answered by the denial cache, and the breaker opening on a
// refused connection and closing when a probe succeeds after the cool-down (on a fake clock).
func TestRedis(t *testing.T) {
	proxy := faultproxy.Start(t, redistest.Addr(t))
	clock := fakeclock.New(fakeclock.T0)
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, DialTimeout: time.Second})
	t.Cleanup(func() { client.Close() })
	m := newMeter(t)
	seen, hearing := outagespec.Hearing(m.Hooks())
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithClock(clock),
		ratelimit.WithBreaker(1, time.Second), ratelimit.WithDenialCache(100), ratelimit.WithObserver(seen))
	l := mustNew(t, store, ratelimit.Policy{Name: "one", Limit: 2, Window: time.Hour})
	hearing(t) // the cache caches denials once it hears refunds
	for i, want := range []struct {
		allowed bool
		source  observe.Source
	}{{true, observe.SourceStore}, {false, observe.SourceStore}, {false, observe.SourceDenialCache}} {
		cost := int64(1)
		if i == 0 {
			cost = 2 // spends the quota at a cost of 2: foretells no denial (a cost of 1 would)
		}
		d, err := l.AllowN(context.Background(), "k", cost)
		if err != nil || d.Allowed != want.allowed || d.Source != want.source {
			t.Fatalf("request %d: allowed %v from the %v (%v); want %v from the %v", i+1, d.Allowed, d.Source, err, want.allowed, want.source)
		}
	}
	proxy.Refuse()
	if _, err := allow(l, "other"); err == nil {
		t.Fatal("a check with Redis refusing connections succeeded")
	}
	m.breaker(t, 1, 1, 0)
	if err := proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if d, err := allow(l, "third"); err != nil || !d.Allowed {
		t.Fatalf("the probe after the cool-down: %+v, %v; want allowed", d, err)
	}
	for _, c := range []struct {
		outcome, source string
		want            int64
	}{{"allowed", "store", 2}, {"denied", "store", 1}, {"denied", "denial_cache", 1}, {"allowed", "denial_cache", 0}} {
		if got := m.decisions(t, "one", c.outcome, c.source); got != c.want {
			t.Errorf("decisions{outcome=%s, source=%s} %d, want %d", c.outcome, c.source, got, c.want)
		}
	}
	m.breaker(t, 0, 1, 1)
}

// ratelimit.denial_cache.deaf counts the Redis stores whose denial cache does not hear the
// fleet's refunds and resets: none once they are subscribed, one while a store's Redis refuses
// connections (its subscription broken), none again when it is back.
func TestDenialCachesDeaf(t *testing.T) {
	m := newMeter(t)
	outagespec.DeafCache(t, m.Hooks(), func() (float64, bool) {
		if !m.recorded(t, "ratelimit.denial_cache.deaf") {
			return 0, false
		}
		return float64(m.sum(t, "ratelimit.denial_cache.deaf")), true
	})
}

// Over a scripted outage (Redis killed and restarted), the requests counted by result equal
// the responses by status.
func TestOutageCountsEqualResponses(t *testing.T) {
	m := newMeter(t)
	outagespec.Run(t, m.Observer.Hooks(), func(result string) float64 {
		return float64(m.sum(t, "ratelimit.requests", attribute.String("ratelimit.result", result)))
	})
}

// A Redis store's checks are database calls in the conventions' terms: db.client.operation.duration
// with the system, the operation, the function and the server.
func TestRedisCallAttributes(t *testing.T) {
	m := newMeter(t)
	addr := redistest.Addr(t)
	client := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { client.Close() })
	l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithObserver(m.Hooks())),
		ratelimit.Policy{Limit: 5, Window: time.Minute})
	for range 3 {
		if _, err := allow(l, "k"); err != nil {
			t.Fatal(err)
		}
	}
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	dps := m.metric(t, "db.client.operation.duration").Data.(metricdata.Histogram[float64]).DataPoints
	if len(dps) != 1 || dps[0].Count != 3 {
		t.Fatalf("db.client.operation.duration: %d series, want 1 with 3 calls", len(dps))
	}
	for key, want := range map[attribute.Key]attribute.Value{
		"db.system.name": attribute.StringValue("redis"), "db.operation.name": attribute.StringValue("FCALL"),
		"server.address": attribute.StringValue(host), "server.port": attribute.IntValue(p),
	} {
		if got, ok := dps[0].Attributes.Value(key); !ok || got != want {
			t.Errorf("%s = %v, want %v", key, got.Emit(), want.Emit())
		}
	}
	if fn, _ := dps[0].Attributes.Value("db.stored_procedure.name"); !strings.HasPrefix(fn.AsString(), "ratelimit_check_") {
		t.Errorf("db.stored_procedure.name = %q, want the library's check function", fn.AsString())
	}
}

// A request holding an in-flight slot is counted in ratelimit.inflight_slot.holders until its
// handler returns; then how long it held the slot is recorded. The deprecated names,
// ratelimit.active_request_leases and ratelimit.request_lease.duration, carry the same figures.
func TestSlotHolders(t *testing.T) {
	m := newMeter(t)
	clock := fakeclock.New(fakeclock.T0)
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock), ratelimit.WithObserver(m.Hooks())),
		ratelimit.Policy{Name: "slots", Limit: 2, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	var during, duringOld int64
	h := ratelimit.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		during, duringOld = m.sum(t, "ratelimit.inflight_slot.holders"), m.sum(t, "ratelimit.active_request_leases")
		clock.Advance(2 * time.Second)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	after, afterOld := m.sum(t, "ratelimit.inflight_slot.holders"), m.sum(t, "ratelimit.active_request_leases")
	if during != 1 || after != 0 {
		t.Errorf("slot holders during the handler %d, after %d; want 1, 0", during, after)
	}
	if duringOld != during || afterOld != after {
		t.Errorf("ratelimit.active_request_leases during %d, after %d; want the new name's %d, %d", duringOld, afterOld, during, after)
	}
	held, heldOld := m.histogram(t, "ratelimit.inflight_slot.hold.duration"), m.histogram(t, "ratelimit.request_lease.duration")
	if held.Count != 1 || held.Sum != 2 {
		t.Errorf("hold durations recorded: %d, sum %v s; want 1, 2 s", held.Count, held.Sum)
	}
	if heldOld.Count != held.Count || heldOld.Sum != held.Sum || !slices.Equal(heldOld.BucketCounts, held.BucketCounts) {
		t.Errorf("ratelimit.request_lease.duration: %d, sum %v, buckets %v; want the new name's %d, %v, %v",
			heldOld.Count, heldOld.Sum, heldOld.BucketCounts, held.Count, held.Sum, held.BucketCounts)
	}
}

// ratelimit.store.degraded counts the stores running without a feature, as a user meets each:
// a store over a Ring has no denial cache, a store whose server refuses merged checks sends
// them one by one.
func TestStoresDegraded(t *testing.T) {
	m := newMeter(t)
	outagespec.Degraded(t, m.Observer.Hooks(), func(feature string) (float64, bool) {
		s, ok := m.metric(t, "ratelimit.store.degraded").Data.(metricdata.Sum[int64])
		if !ok {
			t.Fatal("ratelimit.store.degraded is not an int64 sum")
		}
		want := attribute.NewSet(attribute.String("ratelimit.store.feature", feature))
		for _, dp := range s.DataPoints {
			if dp.Attributes.Equals(&want) {
				return float64(dp.Value), true
			}
		}
		return 0, false
	})
}
