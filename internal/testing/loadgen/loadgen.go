// Package loadgen drives the calls of the measuring programs (tools/benchtable,
// tools/adapterbench and tools/rueidisbench): many goroutines for throughput, one for
// latency, and HTTP load through wrk or a Go generator (http.go).
package loadgen

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Call is one operation under measurement, on an identity.
type Call func(ctx context.Context, key string) error

// Rate calls call from the given number of goroutines for about d, each call on the next of
// keys, and returns the calls completed and the time they took. The first error stops it.
func Rate(ctx context.Context, call Call, keys []string, goroutines int, d time.Duration) (int64, time.Duration, error) {
	var (
		next, calls atomic.Int64
		stop        atomic.Bool
		wg          sync.WaitGroup
		errs        = make(chan error, goroutines)
	)
	start := time.Now()
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int64(0)
			for !stop.Load() {
				if err := call(ctx, keys[next.Add(1)%int64(len(keys))]); err != nil {
					errs <- err
					stop.Store(true)
					break
				}
				n++
			}
			calls.Add(n)
		}()
	}
	time.Sleep(d) // a measuring period, not a wait for an event
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errs:
		return 0, 0, err
	default:
	}
	return calls.Load(), elapsed, nil
}

// Latencies calls call from one goroutine for d, cycling through keys, and appends the
// latency of each call to samples.
func Latencies(ctx context.Context, call Call, keys []string, d time.Duration, samples []time.Duration) ([]time.Duration, error) {
	for i, end := 0, time.Now().Add(d); i == 0 || time.Now().Before(end); i++ {
		start := time.Now()
		if err := call(ctx, keys[i%len(keys)]); err != nil {
			return samples, err
		}
		samples = append(samples, time.Since(start))
	}
	return samples, nil
}

// P50 returns the median of samples in microseconds; it sorts them.
func P50(samples []time.Duration) float64 {
	slices.Sort(samples)
	return float64(samples[len(samples)/2].Nanoseconds()) / 1e3
}

// Each calls call once on every one of keys, from the given number of goroutines, and
// returns the first error.
func Each(ctx context.Context, call Call, keys []string, goroutines int) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(keys)); i = next.Add(1) - 1 {
				if err := call(ctx, keys[i]); err != nil {
					errOnce.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// Allocs returns the heap allocations of one call, averaged over runs calls cycling through
// keys. They are the process's: a client's own goroutines count too.
func Allocs(ctx context.Context, call Call, keys []string, runs int) (float64, error) {
	var err error
	i := 0
	n := testing.AllocsPerRun(runs, func() {
		if e := call(ctx, keys[i%len(keys)]); e != nil && err == nil {
			err = e
		}
		i++
	})
	return n, err
}
