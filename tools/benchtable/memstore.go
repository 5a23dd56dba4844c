package main

import (
	"context"
	"hash/maphash"
	"net/http"
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
// update under a mutex, in one of 64 shards padded to whole cache line pairs, as the store's
// are. Its scaling from GOMAXPROCS 1 to 2 is what this machine gives such a structure: two
// cores writing shards both use pass lines between them, which costs more on some machines
// (and some runs of a virtual one) than on others.
type mapFloor struct {
	shards [64]struct {
		mu sync.Mutex
		m  map[string]int64
		_  [112]byte
	}
	seed maphash.Seed
}

func newMapFloor() *mapFloor {
	f := &mapFloor{seed: maphash.MakeSeed()}
	for i := range f.shards {
		f.shards[i].m = map[string]int64{}
	}
	return f
}

func (f *mapFloor) check(key string) {
	sh := &f.shards[maphash.String(f.seed, key)%uint64(len(f.shards))]
	sh.mu.Lock()
	sh.m[key]++
	sh.mu.Unlock()
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
	floor := newMapFloor().check
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
		// checks/s at GOMAXPROCS 2 over checks/s at 1
		f["ms.scale."+s.name] = f["ms.p1."+s.name] / f["ms.p2."+s.name]
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

// middlewareFigures takes the ns, allocations and bytes per request of net/http Middleware
// over the memory store (one policy that admits every request) in front of a bare handler,
// beside the bare handler alone, as BenchmarkMiddleware's "bare" and "memory" do.
func middlewareFigures(f figures) error {
	l, err := ratelimit.New(ratelimit.NewMemoryStore(), unlimited)
	if err != nil {
		return err
	}
	for _, s := range []struct {
		name string
		h    http.Handler
	}{{"bare", okHandler}, {"ours", ratelimit.Middleware(l)(okHandler)}} {
		serve := serveOne(s.h)
		r := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				serve()
			}
		})
		f["mwm."+s.name] = nsPerOp(r)
		f["mwmallocs."+s.name] = float64(r.AllocsPerOp())
		f["mwmbytes."+s.name] = float64(r.AllocedBytesPerOp())
	}
	f["mwm.added"] = f["mwm.ours"] - f["mwm.bare"]
	return nil
}
