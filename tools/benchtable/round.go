package main

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

// figures maps a figure's name ("lat.gcra1", "srv.evalsha") to its value.
type figures = loadgen.Figures

const (
	allocRuns = 1000                   // calls averaged by each allocation figure
	warmUp    = 100 * time.Millisecond // of every Redis subject, before its figures
)

// subject is one operation whose Redis figures are taken: a floor or a check.
type subject struct {
	name    string // the figures' suffix
	command string // the command whose time per call is the subject's Redis time
	call    caller
}

// round takes every timed figure once, each floor right before what it is the floor of; with
// -only, those of that table alone (see apart).
func (e *env) round(ctx context.Context, r int) (figures, error) {
	f := figures{}
	if e.s.takes(onlyCalendar) {
		if err := e.calendarFigures(ctx, r, f); err != nil {
			return nil, fmt.Errorf("calendar: %w", err)
		}
	}
	if e.s.takes(onlyHolds) {
		if err := e.holdsFigures(ctx, r, f); err != nil {
			return nil, fmt.Errorf("holds: %w", err)
		}
	}
	if e.s.takes(onlyTail) {
		if err := e.httpFigures(ctx, r, f); err != nil {
			return nil, fmt.Errorf("net/http: %w", err)
		}
		if err := e.hotFigures(ctx, r, f); err != nil {
			return nil, fmt.Errorf("hot key: %w", err)
		}
	}
	if e.s.only != "" {
		return f, nil
	}
	if err := e.redisFigures(ctx, r, f); err != nil {
		return nil, err
	}
	if err := memoryStoreFigures(f, e.keys); err != nil {
		return nil, fmt.Errorf("memory store: %w", err)
	}
	if err := middlewareFigures(f); err != nil {
		return nil, fmt.Errorf("net/http over the memory store: %w", err)
	}
	if err := e.accessFigures(f, r); err != nil {
		return nil, fmt.Errorf("access lists: %w", err)
	}
	return f, nil
}

// redisFigures takes the Redis time, the throughput, the p50 latency and the allocations of
// PING, the trivial EVALSHA and the checks of one and three policies. Each round's limiters
// have keys of their own, so no round inherits the state of another.
func (e *env) redisFigures(ctx context.Context, r int, f figures) error {
	prefix := fmt.Sprintf("bt%d:", r)
	one, err := limiter(e.client, prefix+"one:", gcra1)
	if err != nil {
		return err
	}
	three, err := limiter(e.client, prefix+"three:", gcra3)
	if err != nil {
		return err
	}
	plain, err := limiter(e.plain, prefix+"plain:", gcra1)
	if err != nil {
		return err
	}
	compact, err := limiter(e.client, prefix+"compact:", gcra1, ratelimit.WithCompactState())
	if err != nil {
		return err
	}
	oneHash, err := limiter(e.client, prefix+"oneh:", gcra1, ratelimit.WithHashState())
	if err != nil {
		return err
	}
	threeHash, err := limiter(e.client, prefix+"threeh:", gcra3, ratelimit.WithHashState())
	if err != nil {
		return err
	}
	for _, s := range []subject{
		{"ping", "ping", e.ping},
		{"evalsha", "evalsha", e.evalsha},
		{"tgs", "evalsha", e.timeGetSet},
		{"tgs3", "evalsha", e.timeGetSet3},
		{"gcra1", "fcall", check(one)},
		{"gcra1c", "fcall", check(compact)},
		{"gcra3", "fcall", check(three)},
		{"gcra1h", "fcall", check(oneHash)},
		{"gcra3h", "fcall", check(threeHash)},
	} {
		if err := e.measure(ctx, s, f); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	f["srv.extra"] = (f["srv.gcra3"] - f["srv.gcra1"]) / 2
	f["srv64.extra"] = (f["srv64.gcra3"] - f["srv64.gcra1"]) / 2
	f["srv.extrah"] = (f["srv.gcra3h"] - f["srv.gcra1h"]) / 2
	f["srv64.extrah"] = (f["srv64.gcra3h"] - f["srv64.gcra1h"]) / 2
	f["srv.tgsextra"] = (f["srv.tgs3"] - f["srv.tgs"]) / 2
	f["srv64.tgsextra"] = (f["srv64.tgs3"] - f["srv64.tgs"]) / 2
	n, err := allocs(ctx, check(plain), e.keys, allocRuns)
	f["allocs.gcra1.plain"] = n
	return err
}

// measure takes the four Redis figures of s.
func (e *env) measure(ctx context.Context, s subject, f figures) error {
	// Opens the pool's connections and loads the script outside the measure.
	if _, err := rate(ctx, s.call, e.keys, e.s.goroutines, warmUp); err != nil {
		return err
	}
	// Redis' time per call is read over each phase apart: the server is idle between the
	// calls of one goroutine and saturated by 64, and the script's share differs.
	var lat, tput, srv, srv64 float64
	stats, err := e.serverTime(ctx, func() (err error) {
		lat, err = p50(ctx, s.call, e.keys, e.s.phase)
		return err
	})
	if err == nil {
		srv, err = stats.perCall(s.command)
	}
	if err != nil {
		return err
	}
	// The server's main thread's CPU over the throughput phase, per call and in all: what a
	// call costs Redis whole (reading, parsing, running and answering it), and how close the
	// thread came to saturation.
	cpu0, err := e.serverCPU(ctx)
	if err != nil {
		return err
	}
	client0 := clientCPU()
	start := time.Now()
	var n64 int64
	stats64, err := e.serverTime(ctx, func() (err error) {
		tput, n64, err = rateN(ctx, s.call, e.keys, e.s.goroutines, e.s.phase)
		return err
	})
	elapsed := time.Since(start).Seconds()
	if err == nil {
		srv64, err = stats64.perOp(s.command, n64) // per check: calls are merged
	}
	if err != nil {
		return err
	}
	cpu1, err := e.serverCPU(ctx)
	if err != nil {
		return err
	}
	f["cpu64."+s.name] = (cpu1 - cpu0) * 1e6 / (tput * elapsed)
	f["client64."+s.name] = (clientCPU() - client0) * 1e6 / (tput * elapsed)
	f["busy64."+s.name] = 100 * (cpu1 - cpu0) / elapsed
	n, err := allocs(ctx, s.call, e.keys, allocRuns)
	if err != nil {
		return err
	}
	f["lat."+s.name], f["tput."+s.name], f["allocs."+s.name] = lat, tput, n
	// What the call's latency holds besides its Redis time: the client, the network, and
	// Redis reading the call and writing its reply (which commandstats does not count).
	f["rest."+s.name] = lat - srv
	f["srv."+s.name], f["srv64."+s.name] = srv, srv64
	e.breakdown[s.name] = stats
	return nil
}

// serverCPU returns the seconds of CPU the server's main thread has used (INFO cpu).
func (e *env) serverCPU(ctx context.Context) (float64, error) {
	info, err := e.client.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var total float64
	for _, field := range []string{"used_cpu_sys_main_thread", "used_cpu_user_main_thread"} {
		v, err := strconv.ParseFloat(infoField(info, field), 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu %s: %w", field, err)
		}
		total += v
	}
	return total, nil
}

// clientCPU returns the seconds of CPU this process has used (user and system, every
// thread): the client's share of the machine, which it splits with Redis and the kernel.
func clientCPU() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()).Seconds()
}

// serverTime returns the INFO commandstats of what phase makes the server do.
func (e *env) serverTime(ctx context.Context, phase func() error) (commandStats, error) {
	if err := e.client.ConfigResetStat(ctx).Err(); err != nil {
		return nil, err
	}
	if err := phase(); err != nil {
		return nil, err
	}
	return readCommandStats(ctx, e.client)
}
