package ratelimit_test

import (
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// The record of a list's holds on Redis lives as long as its longest hold and window need
// (here the window, a minute, and a minute of grace), and a Reserve never shortens it: one that
// finds it shorter lengthens it, one that finds it longer leaves it.
func TestHoldsRecordLifetime(t *testing.T) {
	client := redistest.Standalone(t)
	l := mustNew(t, redisStore(t, client, ratelimit.WithClock(newFakeClock())), ratelimit.Policy{Limit: 100, Window: time.Minute})
	key := keyOf(t)
	reserve(t, l, key, 1)
	records, err := client.Keys(ctx, "*{"+key+"}:h*").Result() // the test's identity, its list's record
	if err != nil || len(records) != 1 {
		t.Fatalf("the holds' records: %v, %v; want one", records, err)
	}
	record, keep := records[0], 2*time.Minute
	for _, c := range []struct {
		set  time.Duration // the record's lifetime before the Reserve
		want time.Duration // at least, after it
	}{{0, keep - 10*time.Second}, {5 * time.Second, keep - 10*time.Second}, {time.Hour, time.Hour - 10*time.Second}} {
		if c.set > 0 {
			client.PExpire(ctx, record, c.set)
			reserve(t, l, key, 1)
		}
		ttl := client.PTTL(ctx, record).Val()
		if ttl < c.want || ttl > max(c.set, keep) {
			t.Errorf("record lives %v after a Reserve (it lived %v before); want %v to %v", ttl, c.set, c.want, max(c.set, keep))
		}
	}
}
