package ratelimit_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// unlimitedGCRA is the policy of performance target 6: GCRA at 10^9 per second, which no
// benchmark exhausts even on one key, so that every check takes the allowed path, the one
// that writes.
var unlimitedGCRA = ratelimit.Policy{Limit: 1_000_000_000, Window: time.Second}

// BenchmarkMemoryStore measures Limiter.Allow over the memory store with one GCRA policy, as
// tools/benchtable does for target 6: on one key, and under b.RunParallel over 10,000
// identities (run it with -cpu 1,2 for GOMAXPROCS 1 and 2).
func BenchmarkMemoryStore(b *testing.B) {
	l := mustNew(b, ratelimit.NewMemoryStore(), unlimitedGCRA)
	b.Run("onekey", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Allow(ctx, "bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("ip:203.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	}
	b.Run("parallel", func(b *testing.B) {
		var start atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := int(start.Add(int64(len(keys)/8+1))) % len(keys) // each goroutine from a place of its own
			for pb.Next() {
				if _, err := l.Allow(ctx, keys[i]); err != nil {
					b.Error(err)
					return
				}
				if i++; i == len(keys) {
					i = 0
				}
			}
		})
	})
}
