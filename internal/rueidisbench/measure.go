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
)

// allocRuns is how many calls each allocation figure averages.
const allocRuns = 2000

// figure is what one round measured of one subject.
type figure struct {
	rate   float64 // calls per second from s.goroutines goroutines
	server float64 // the server's µs per call meanwhile (INFO commandstats)
	p50    float64 // median latency from one goroutine, µs
	allocs float64 // heap allocations per call
}

// figures maps a subject's name to its figure in one round.
type figures map[string]figure

// round measures every subject: its throughput and latency phases are cut into s.slices
// slices, and the subjects take turns slice by slice, in an order that turns by one each
// time, so that a burst of load from elsewhere on the machine falls on all of them alike.
func (e *env) round(ctx context.Context, r int) (figures, error) {
	subjects, err := e.subjects(ctx, r)
	if err != nil {
		return nil, err
	}
	// Opens the pools' connections, loads the scripts and writes every identity's state
	// outside the measure.
	for _, s := range subjects {
		if err := each(ctx, s.call, e.keys, e.s.goroutines); err != nil {
			return nil, fmt.Errorf("%s: warming up: %w", s.name, err)
		}
	}
	n := len(subjects)
	calls := make([]float64, n)
	elapsed := make([]time.Duration, n)
	server := make([]commandStat, n)
	samples := make([][]time.Duration, n)
	slice := e.s.phase / time.Duration(e.s.slices)
	for i := range e.s.slices {
		for j := range n {
			k := (i + j) % n
			before, err := e.commandStats(ctx)
			if err != nil {
				return nil, err
			}
			c, d, err := rate(ctx, subjects[k].call, e.keys, e.s.goroutines, slice)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", subjects[k].name, err)
			}
			after, err := e.commandStats(ctx)
			if err != nil {
				return nil, err
			}
			calls[k] += c
			elapsed[k] += d
			cmd := subjects[k].command
			server[k].calls += after[cmd].calls - before[cmd].calls
			server[k].usec += after[cmd].usec - before[cmd].usec
		}
		for j := range n {
			k := (i + j) % n
			if samples[k], err = latencies(ctx, subjects[k].call, e.keys, slice, samples[k]); err != nil {
				return nil, fmt.Errorf("%s: %w", subjects[k].name, err)
			}
		}
	}
	f := figures{}
	for k, s := range subjects {
		a, err := allocs(ctx, s.call, e.keys, allocRuns)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		if server[k].calls == 0 {
			return nil, fmt.Errorf("%s: no %s in INFO commandstats", s.name, s.command)
		}
		f[s.name] = figure{
			rate:   calls[k] / elapsed[k].Seconds(),
			server: float64(server[k].usec) / float64(server[k].calls),
			p50:    p50(samples[k]),
			allocs: a,
		}
	}
	return f, nil
}

// each calls call once on every one of keys, from the given number of goroutines.
func each(ctx context.Context, call caller, keys []string, goroutines int) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, goroutines)
	)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(keys)); i = next.Add(1) - 1 {
				if err := call(ctx, keys[i]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// latencies calls call from one goroutine for d, cycling through keys, and appends the
// latency of each call to samples.
func latencies(ctx context.Context, call caller, keys []string, d time.Duration, samples []time.Duration) ([]time.Duration, error) {
	for i, end := 0, time.Now().Add(d); i == 0 || time.Now().Before(end); i++ {
		start := time.Now()
		if err := call(ctx, keys[i%len(keys)]); err != nil {
			return samples, err
		}
		samples = append(samples, time.Since(start))
	}
	return samples, nil
}

// p50 returns the median of samples in microseconds.
func p50(samples []time.Duration) float64 {
	slices.Sort(samples)
	return float64(samples[len(samples)/2].Nanoseconds()) / 1e3
}

// rate calls call from the given number of goroutines for about d, each call on the next of
// keys, and returns the calls completed and the time they took.
func rate(ctx context.Context, call caller, keys []string, goroutines int, d time.Duration) (float64, time.Duration, error) {
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
	return float64(calls.Load()), elapsed, nil
}

// allocs returns the heap allocations of one call, averaged over runs calls cycling through
// keys. They are the process's: a client's own goroutines count too.
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
type commandStat struct{ calls, usec int64 }

// commandStats reads INFO commandstats: a command's name ("evalsha", "fcall") to its line.
func (e *env) commandStats(ctx context.Context) (map[string]commandStat, error) {
	info, err := e.goredis.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO commandstats: %w", err)
	}
	stats := map[string]commandStat{}
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

// infoField returns the value of one "field:value" line of an INFO reply.
func infoField(info, field string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return "?"
}
