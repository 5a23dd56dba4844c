package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

// p50 calls call from one goroutine for d, cycling through keys, and returns the median
// latency in microseconds.
func p50(ctx context.Context, call caller, keys []string, d time.Duration) (float64, error) {
	samples, err := loadgen.Latencies(ctx, loadgen.Call(call), keys, d, nil)
	if err != nil {
		return 0, err
	}
	return loadgen.P50(samples), nil
}

// rate calls call from the given number of goroutines for d and returns the calls completed
// per second.
func rate(ctx context.Context, call caller, keys []string, goroutines int, d time.Duration) (float64, error) {
	perSecond, _, err := rateN(ctx, call, keys, goroutines, d)
	return perSecond, err
}

// rateN is rate, which also returns how many calls completed.
func rateN(ctx context.Context, call caller, keys []string, goroutines int, d time.Duration) (float64, int64, error) {
	n, elapsed, err := loadgen.Rate(ctx, loadgen.Call(call), keys, goroutines, d)
	if err != nil {
		return 0, 0, err
	}
	return float64(n) / elapsed.Seconds(), n, nil
}

// allocs returns the heap allocations of one call (see loadgen.Allocs).
func allocs(ctx context.Context, call caller, keys []string, runs int) (float64, error) {
	return loadgen.Allocs(ctx, loadgen.Call(call), keys, runs)
}

// commandStats maps a command name ("evalsha", "set", "config|resetstat") to its statistics.
type commandStats map[string]loadgen.CommandStat

// readCommandStats reads INFO commandstats.
func readCommandStats(ctx context.Context, c *redis.Client) (commandStats, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	return loadgen.CommandStats(info), nil
}

// perCall returns the server's microseconds per call of command, the usec_per_call of INFO
// commandstats (computed from usec and calls, for two more digits).
func (s commandStats) perCall(command string) (float64, error) {
	c, ok := s[command]
	if !ok || c.Calls == 0 {
		return 0, fmt.Errorf("no %s in INFO commandstats", command)
	}
	return float64(c.Usec) / float64(c.Calls), nil
}

// perOp returns the server's microseconds of command per operation, n operations having
// run: the store merges concurrent checks, several to a call (see package
// internal/rediscall), so its calls are fewer than its checks.
func (s commandStats) perOp(command string, n int64) (float64, error) {
	c, ok := s[command]
	if !ok || c.Calls == 0 || n == 0 {
		return 0, fmt.Errorf("no %s in INFO commandstats", command)
	}
	return float64(c.Usec) / float64(n), nil
}

// infoField returns the value of one "field:value" line of an INFO reply.
func infoField(info, field string) string { return loadgen.InfoField(info, field) }
