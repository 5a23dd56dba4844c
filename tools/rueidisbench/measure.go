package main

import (
	"context"
	"fmt"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
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
			c, d, err := loadgen.Rate(ctx, loadgen.Call(subjects[k].call), e.keys, e.s.goroutines, slice)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", subjects[k].name, err)
			}
			after, err := e.commandStats(ctx)
			if err != nil {
				return nil, err
			}
			calls[k] += float64(c)
			elapsed[k] += d
			cmd := subjects[k].command
			server[k].Calls += after[cmd].Calls - before[cmd].Calls
			server[k].Usec += after[cmd].Usec - before[cmd].Usec
		}
		for j := range n {
			k := (i + j) % n
			if samples[k], err = loadgen.Latencies(ctx, loadgen.Call(subjects[k].call), e.keys, slice, samples[k]); err != nil {
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
		if server[k].Calls == 0 {
			return nil, fmt.Errorf("%s: no %s in INFO commandstats", s.name, s.command)
		}
		f[s.name] = figure{
			rate:   calls[k] / elapsed[k].Seconds(),
			server: float64(server[k].Usec) / float64(server[k].Calls),
			p50:    loadgen.P50(samples[k]),
			allocs: a,
		}
	}
	return f, nil
}

// each calls call once on every one of keys (see loadgen.Each).
func each(ctx context.Context, call caller, keys []string, goroutines int) error {
	return loadgen.Each(ctx, loadgen.Call(call), keys, goroutines)
}

// allocs returns the heap allocations of one call (see loadgen.Allocs).
func allocs(ctx context.Context, call caller, keys []string, runs int) (float64, error) {
	return loadgen.Allocs(ctx, loadgen.Call(call), keys, runs)
}

// commandStat is one command's line of INFO commandstats.
type commandStat = loadgen.CommandStat

// commandStats reads INFO commandstats: a command's name ("evalsha", "fcall") to its line.
func (e *env) commandStats(ctx context.Context) (map[string]commandStat, error) {
	info, err := e.goredis.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO commandstats: %w", err)
	}
	return loadgen.CommandStats(info), nil
}

// infoField returns the value of one "field:value" line of an INFO reply.
func infoField(info, field string) string { return loadgen.InfoField(info, field) }
