package ratelimit_test

import (
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/redistest"
)

// threePolicies is the multi-window list of the targets: 10/s + 100/min + 1000/h.
func threePolicies(alg algorithms.Algorithm) []ratelimit.Policy {
	return []ratelimit.Policy{
		ratelimit.Policy{Limit: 10, Window: time.Second, Algorithm: alg}, ratelimit.Policy{Limit: 100, Window: time.Minute, Algorithm: alg}, ratelimit.Policy{Limit: 1000, Window: time.Hour, Algorithm: alg},
	}
}

// Large limits keep every benchmark request on the allowed path, the one that writes.
func benchPolicies(alg algorithms.Algorithm, n int) []ratelimit.Policy {
	if n == 1 {
		return []ratelimit.Policy{ratelimit.Policy{Limit: 1_000_000, Window: time.Second, Burst: 0, Algorithm: alg}}
	}
	return []ratelimit.Policy{
		ratelimit.Policy{Limit: 100_000, Window: time.Second, Algorithm: alg}, ratelimit.Policy{Limit: 1_000_000, Window: time.Minute, Algorithm: alg}, ratelimit.Policy{Limit: 10_000_000, Window: time.Hour, Algorithm: alg},
	}
}

func benchAlgorithms() []algorithms.Algorithm {
	return []algorithms.Algorithm{algorithms.FixedWindow{}, algorithms.SlidingCounter{}, algorithms.TokenBucket{},
		algorithms.LeakyBucket{}, algorithms.GCRA{}}
}

// BenchmarkMemory measures one check on an existing key of the memory store.
func BenchmarkMemory(b *testing.B) {
	for _, alg := range benchAlgorithms() {
		for _, n := range []int{1, 3} {
			b.Run(alg.Name()+"/"+strconv.Itoa(n)+"policy", func(b *testing.B) {
				l := mustNew(b, ratelimit.NewMemoryStore(), benchPolicies(alg, n)...)
				l.Allow(ctx, "bench")
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := l.Allow(ctx, "bench"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	b.Run("sliding_window_log/1policy", func(b *testing.B) {
		clock := newFakeClock()
		l := mustNew(b, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 100, Window: time.Second, Algorithm: algorithms.SlidingLog{}})
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			clock.Advance(10 * time.Millisecond) // steady at the limit: one in, one out
			l.Allow(ctx, "bench")
		}
	})
}

// latency runs f b.N times and reports the median and 99th percentile in microseconds.
func latency(b *testing.B, f func()) {
	samples := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range samples {
		start := time.Now()
		f()
		samples[i] = time.Since(start)
	}
	b.StopTimer()
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// throughput runs f from 64 goroutines over 10,000 keys and reports calls per second.
func throughput(b *testing.B, f func(key string)) {
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	var next atomic.Int64
	b.SetParallelism(32) // 32 × GOMAXPROCS (2 here) = 64 goroutines
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			f(keys[next.Add(1)%int64(len(keys))])
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}

// BenchmarkRedis compares checks against a trivial EVALSHA in the same run.
func BenchmarkRedis(b *testing.B) {
	client := redistest.Standalone(b)
	trivial := redis.NewScript("return 1")
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(b)))

	b.Run("trivial-evalsha/latency", func(b *testing.B) {
		latency(b, func() { trivial.Run(ctx, client, []string{"x"}) })
	})
	b.Run("trivial-evalsha/throughput", func(b *testing.B) {
		throughput(b, func(key string) { trivial.Run(ctx, client, []string{key}) })
	})
	// The least any limiter script does: read a timestamp, write it back with an expiry.
	readWrite := redis.NewScript(`local t = tonumber(redis.call('GET', KEYS[1]) or ARGV[1])
redis.call('SET', KEYS[1], string.format('%d', t + 1), 'PX', 60000) return {1, 0, 0, 0, 0}`)
	b.Run("get-set-evalsha/latency", func(b *testing.B) {
		latency(b, func() { readWrite.Run(ctx, client, []string{"rw"}, 1) })
	})
	for _, alg := range benchAlgorithms() {
		for _, n := range []int{1, 3} {
			l := mustNew(b, store, benchPolicies(alg, n)...)
			name := alg.Name() + "/" + strconv.Itoa(n) + "policy"
			b.Run(name+"/latency", func(b *testing.B) {
				latency(b, func() {
					if _, err := l.Allow(ctx, "bench"); err != nil {
						b.Fatal(err)
					}
				})
			})
			b.Run(name+"/throughput", func(b *testing.B) {
				throughput(b, func(key string) { l.Allow(ctx, key) })
			})
		}
	}
}

// TestRedisMemoryPerKey reports MEMORY USAGE per key for every algorithm (go test -v), and
// holds GCRA, the default, to one small string.
func TestRedisMemoryPerKey(t *testing.T) {
	client := redistest.Standalone(t)
	for _, alg := range allAlgorithms {
		store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix("m:"))
		l := mustNew(t, store, ratelimit.Policy{Limit: 100, Window: time.Minute, Algorithm: alg})
		key := "10.1.2.3"
		l.Reset(ctx, key)
		allow(t, l, key, 1)
		keys, _ := client.Keys(ctx, "m:{"+key+"}*").Result()
		if len(keys) != 1 {
			t.Fatalf("%s wrote keys %v, want one", alg.Name(), keys)
		}
		usage, err := client.MemoryUsage(ctx, keys[0]).Result()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-24s %-34s %3d bytes", alg.Name(), keys[0], usage)
		if _, ok := alg.(algorithms.GCRA); ok && usage > 80 {
			t.Errorf("GCRA key uses %d bytes, want at most 80", usage)
		}
		l.Reset(ctx, key)
	}
}
