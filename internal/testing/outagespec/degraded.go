package outagespec

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// Degraded makes two Redis stores run without a feature, as a user meets each, with obs as
// their observer: a store over a Ring (no denial cache: the Ring cannot hear every server's
// announcements), and a store whose server is in cluster mode behind one address (it refuses
// merged checks, which are then sent one by one). degraded returns what obs counts as stores
// degraded in a feature now, and ok false while it has no series of it. Every feature of
// observe.Degradations must read 0 before, and after: denial_cache 1, merged_checks 1,
// compact_expiry 0 (the servers are Redis 7); and 0 again once both stores are closed (twice).
func Degraded(t *testing.T, obs *ratelimit.Observer, degraded func(feature string) (n float64, ok bool)) {
	t.Helper()
	want := func(what string, counts map[string]float64) {
		t.Helper()
		for _, f := range observe.Degradations() {
			if n, ok := degraded(f); !ok || n != counts[f] {
				t.Errorf("%s: %v stores degraded in %s (series recorded: %v); want %v", what, n, f, ok, counts[f])
			}
		}
	}
	want("before any store", nil)

	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"one": redistest.Addr(t)}})
	t.Cleanup(func() { ring.Close() })
	overRing := ratelimit.NewRedisStore(ring, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithObserver(obs))
	want("a store over a Ring", map[string]float64{"denial_cache": 1})

	client := redis.NewClient(&redis.Options{Addr: redistest.OneShardCluster(t), ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	unmerged := ratelimit.NewRedisStore(client, ratelimit.WithDenialCache(0), ratelimit.WithObserver(obs))
	l, err := ratelimit.New(unmerged, ratelimit.Policy{Limit: 1, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// Concurrent checks queue behind the calls on the wire and leave merged: the server
	// refuses the first merged call. Rounds of them until it has, or 20 s.
	for round, deadline := 0, time.Now().Add(20*time.Second); ; round++ {
		if n, _ := degraded("merged_checks"); n > 0 || time.Now().After(deadline) {
			break
		}
		var wg sync.WaitGroup
		for g := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := l.Allow(context.Background(), "user:"+strconv.Itoa(round)+":"+strconv.Itoa(g)); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	want("a store whose server refuses merged checks", map[string]float64{"denial_cache": 1, "merged_checks": 1})

	for _, s := range []ratelimit.RedisStore{overRing, unmerged, overRing, unmerged} {
		s.Close()
	}
	want("both stores closed", nil)
}
