package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// p50 calls call from one goroutine for d, cycling through keys, and returns the median
// latency in microseconds.
func p50(ctx context.Context, call caller, keys []string, d time.Duration) (float64, error) {
	var samples []time.Duration
	for i, end := 0, time.Now().Add(d); i == 0 || time.Now().Before(end); i++ {
		start := time.Now()
		if err := call(ctx, keys[i%len(keys)]); err != nil {
			return 0, err
		}
		samples = append(samples, time.Since(start))
	}
	slices.Sort(samples)
	return float64(samples[len(samples)/2].Nanoseconds()) / 1e3, nil
}

// rate calls call from the given number of goroutines for d, each call on the next of keys,
// and returns the calls completed per second.
func rate(ctx context.Context, call caller, keys []string, goroutines int, d time.Duration) (float64, error) {
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
		return 0, err
	default:
	}
	return float64(calls.Load()) / elapsed.Seconds(), nil
}

// allocs returns the heap allocations of one call, averaged over runs calls cycling through
// keys.
func allocs(ctx context.Context, call caller, keys []string, runs int) (float64, error) {
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

// commandStat is one command's line of INFO commandstats.
type commandStat struct {
	calls int64
	usec  int64
}

// commandStats maps a command name ("evalsha", "set", "config|resetstat") to its statistics.
type commandStats map[string]commandStat

// readCommandStats reads INFO commandstats.
func readCommandStats(ctx context.Context, c *redis.Client) (commandStats, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	stats := commandStats{}
	for line := range strings.SplitSeq(info, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		var s commandStat
		for field := range strings.SplitSeq(fields, ",") {
			k, v, _ := strings.Cut(field, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				s.calls = n
			case "usec":
				s.usec = n
			}
		}
		stats[name] = s
	}
	return stats, nil
}

// perCall returns the server's microseconds per call of command, the usec_per_call of INFO
// commandstats (computed from usec and calls, for two more digits).
func (s commandStats) perCall(command string) (float64, error) {
	c, ok := s[command]
	if !ok || c.calls == 0 {
		return 0, fmt.Errorf("no %s in INFO commandstats", command)
	}
	return float64(c.usec) / float64(c.calls), nil
}

// infoField returns the value of one "field:value" line of an INFO reply.
func infoField(info, field string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return "?"
}
