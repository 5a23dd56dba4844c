package main

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// unlimited is the memory store's policy: GCRA at 10^9 per second, which no benchmark here
// exhausts even on one key, so every check takes the allowed path.
var unlimited = ratelimit.Policy{Limit: 1_000_000_000, Window: time.Second}

// mapFloor is the floor of the memory store: the least an in-process limiter does, a map
// update under one mutex.
type mapFloor struct {
	mu sync.Mutex
	m  map[string]int64
}

func (f *mapFloor) check(key string) {
	f.mu.Lock()
	f.m[key]++
	f.mu.Unlock()
}

// memoryStoreFigures takes the memory store's ns and allocations per check of one policy on
// one key, and its ns per check under b.RunParallel at GOMAXPROCS 1 and 2 over keys, each
// beside the same figure of mapFloor.
func memoryStoreFigures(f figures, keys []string) error {
	l, err := ratelimit.New(ratelimit.NewMemoryStore(), unlimited)
	if err != nil {
		return err
	}
	ctx := context.Background()
	ours := func(key string) { _, _ = l.Allow(ctx, key) }
	floor := (&mapFloor{m: map[string]int64{}}).check
	for _, s := range []struct {
		name  string
		check func(string)
	}{{"floor", floor}, {"gcra1", ours}} {
		r := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.check("bench")
			}
		})
		f["ms."+s.name] = nsPerOp(r)
		f["msallocs."+s.name] = float64(r.AllocsPerOp())
		for _, procs := range []int{1, 2} {
			f["ms.p"+string(rune('0'+procs))+"."+s.name] = parallel(procs, s.check, keys)
		}
	}
	return nil
}

// parallel returns the ns per check of check under b.RunParallel at GOMAXPROCS procs, each
// goroutine cycling through keys from a place of its own.
func parallel(procs int, check func(string), keys []string) float64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	var start atomic.Int64
	return nsPerOp(testing.Benchmark(func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			i := int(start.Add(int64(len(keys)/8+1))) % len(keys)
			for pb.Next() {
				check(keys[i])
				if i++; i == len(keys) {
					i = 0
				}
			}
		})
	}))
}

// nsPerOp is BenchmarkResult.NsPerOp with the fraction.
func nsPerOp(r testing.BenchmarkResult) float64 {
	if r.N == 0 {
		return 0
	}
	return float64(r.T.Nanoseconds()) / float64(r.N)
}
