package ratelimit_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
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

// TestRedisMemoryPerKey reports what one identity costs Redis under one policy of each
// algorithm (100 per minute; GCRA also at 7 per second, whose interval is a fraction of a
// microsecond): the growth of used_memory over 4,000 identities such as "ip:203.0.113.7",
// divided by their number — key name, value, expiry and allocator overhead included (MEMORY
// USAGE of one key says less), through one connection; and GCRA with compact state, which must
// save at least 16 bytes of it. The keyspace is first grown to 70,000 keys, so that no row
// pays for a hash table doubling; that growth adds 16 to 32 bytes per key on average (two
// tables of 8-byte buckets, 50-100% full). Run with -v to see the figures; it fails only when
// an identity costs more than 256 bytes.
func TestRedisMemoryPerKey(t *testing.T) {
	// A server of its own, whose used_memory only this test moves: it runs beside the other
	// parallel tests, its wait for the rehash (below) theirs too.
	t.Parallel()
	addr := redistest.Private(t)
	type row struct {
		name   string
		policy ratelimit.Policy
		opts   []ratelimit.RedisOption
	}
	// The first row settles what a first use of the server costs (buffers, the script cache);
	// it is measured like the others, and not reported.
	rows := []row{{"", ratelimit.Policy{Limit: 100, Window: time.Minute}, nil}}
	for _, alg := range allAlgorithms {
		rows = append(rows, row{alg.Name(), ratelimit.Policy{Limit: 100, Window: time.Minute, Algorithm: alg}, nil})
	}
	rows = append(rows, row{"gcra, 7/s", ratelimit.Policy{Limit: 7, Window: time.Second}, nil},
		row{"gcra, compact state", ratelimit.Policy{Limit: 100, Window: time.Minute}, []ratelimit.RedisOption{ratelimit.WithCompactState()}})
	const n = 4000 // 10 rows of it, with 70,000 keys first: no hash table doubling in a row
	// One connection, used in turn: a pool opening connections would be measured too.
	one := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
	defer one.Close()
	warm := redistest.Prefix(t)
	warmer := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
	pipe := warmer.Pipeline()
	for i := 0; i < 70_000; i++ {
		pipe.Set(ctx, warm+strconv.Itoa(i), "x", time.Minute)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	warmer.Close() // its connection's buffers go with it, not during a row
	// Redis finishes the doubling's rehash in its background cron, a millisecond every 100 ms;
	// freeing the old table inside a row would only make that row look cheaper.
	time.Sleep(3 * time.Second)   // waits for a process, not for a clock
	bytes := map[string]float64{} // per identity, by row
	for _, r := range rows {
		prefix := redistest.Prefix(t)
		l := mustNew(t, ratelimit.NewRedisStore(one, append([]ratelimit.RedisOption{ratelimit.WithPrefix(prefix)}, r.opts...)...), r.policy)
		allow(t, l, "warm-up", 1) // the script is loaded and compiled outside the measure
		before := usedMemory(t, one)
		for i := 0; i < n; i++ {
			allow(t, l, fmt.Sprintf("ip:203.%d.%d.%d", i>>16&255, i>>8&255, i&255), 1)
		}
		per := float64(usedMemory(t, one)-before) / n
		if r.name == "" {
			continue
		}
		t.Logf("%-24s %6.1f bytes of used_memory per identity", r.name, per)
		if per > 256 {
			t.Errorf("%s: an identity costs %.0f bytes of Redis memory, want at most 256", r.name, per)
		}
		bytes[r.name] = per
	}
	// Compact state saves the value's object (its TAT in the key's expiry, a shared number as
	// its value) and most of the key: 16 bytes at the least, 32 here with keys of 26 bytes.
	if c, g := bytes["gcra, compact state"], bytes["gcra"]; c > g-16 {
		t.Errorf("compact state: %.1f bytes per identity, readable keys %.1f; want at least 16 fewer", c, g)
	}
}

// usedMemory returns the Redis server's used_memory.
func usedMemory(t *testing.T, client *redis.Client) int64 {
	info, err := client.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}

// BenchmarkRedisSlidingLogWorstCase measures the costliest request a policy allows: a sliding
// log at its largest Limit (1,000), charged all at once on a fresh key — 1,000 entries written
// in one script, holding Redis meanwhile. It reports Redis' own time per call (usec_per_call of
// INFO commandstats) next to that of a trivial EVALSHA, measured in the same run, and their
// ratio: how many ordinary script calls one worst request is worth.
func BenchmarkRedisSlidingLogWorstCase(b *testing.B) {
	client := redistest.Standalone(b)
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(b)))
	l := mustNew(b, store, ratelimit.Policy{Limit: 1000, Window: time.Minute, Algorithm: algorithms.SlidingLog{}})
	trivial := redis.NewScript("return 1")
	trivial.Load(ctx, client)
	l.Peek(ctx, "warm") // loads the check function
	serverTime := func(command string, f func()) float64 {
		if err := client.ConfigResetStat(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		f()
		info, err := client.Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		return usecPerCall(b, info, command)
	}
	var worst float64
	fresh := 0 // every call on a key of its own, across the benchmark's runs
	b.Run("cost-1000", func(b *testing.B) {
		worst = serverTime("fcall", func() {
			for range b.N {
				fresh++
				if d, err := l.AllowN(ctx, "worst-"+strconv.Itoa(fresh), 1000); err != nil || !d.Allowed {
					b.Fatal(d, err)
				}
			}
		})
		b.ReportMetric(worst, "redis-µs/call")
	})
	b.Run("trivial-evalsha", func(b *testing.B) {
		floor := serverTime("evalsha", func() {
			for range b.N {
				trivial.EvalSha(ctx, client, []string{"x"})
			}
		})
		b.ReportMetric(floor, "redis-µs/call")
		if floor > 0 {
			b.ReportMetric(worst/floor, "x-floor")
		}
	})
}

// usecPerCall reads usec_per_call of a command from INFO commandstats.
func usecPerCall(b *testing.B, info, command string) float64 {
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_"+command+":") {
			continue
		}
		for _, field := range strings.Split(strings.TrimSpace(line[strings.IndexByte(line, ':')+1:]), ",") {
			if v, ok := strings.CutPrefix(field, "usec_per_call="); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				return f
			}
		}
	}
	b.Fatalf("no %s in INFO commandstats", command)
	return 0
}
