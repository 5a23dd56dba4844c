package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// hotPolicy is the hot identity's policy: GCRA 100/s with a burst of 100, which admits 100 at
// once and one more every 10 ms: 200 in the second that starts on a fresh identity (the last
// on its edge, which the peers' 199 miss too).
var hotPolicy = ratelimit.Policy{Limit: 100, Window: time.Second, Burst: 100, Algorithm: algorithms.GCRA{}}

// hotAllows is what hotPolicy admits in that second: the floor of the hot-key figures.
const hotAllows = 200

// spanAllows is what hotPolicy admits to a fresh identity over the load's span, from its first
// request, sent at first, to end: its burst at once, then one each 10 ms, the last on the
// span's edge counted (rounded up: a floor no lower than what the limiter may admit). It is
// hotAllows when the load starts on the second's boundary; on a busy machine, whose goroutines
// may wake late, the load covers less of the second, and what a limiter can admit in it is this.
func spanAllows(first, end time.Time) float64 {
	every := hotPolicy.Window / time.Duration(hotPolicy.Limit)
	return float64(min(hotAllows, hotPolicy.Burst+int64((end.Sub(first)+every-1)/every)))
}

// hotFigures hammers one identity with e.s.goroutines goroutines for one second from a second
// boundary, through a store with the default options (its denial cache on) and through one
// with WithDenialCache(0), and records how many requests each admitted: hot.gcra and
// hot.nocache, and hot.allows, the floor; and what GCRA admits over the span each load
// covered (hot.gcra.span, hot.nocache.span: see spanAllows). Each round's identities are fresh.
func (e *env) hotFigures(ctx context.Context, r int, f figures) error {
	f["hot.allows"] = hotAllows
	for _, c := range []struct {
		key  string
		opts []ratelimit.RedisOption
	}{{"hot.gcra", nil}, {"hot.nocache", []ratelimit.RedisOption{ratelimit.WithDenialCache(0)}}} {
		l, err := limiter(e.client, fmt.Sprintf("bt%d:%s:", r, c.key), []ratelimit.Policy{hotPolicy}, c.opts...)
		if err != nil {
			return err
		}
		if _, err := l.Allow(ctx, "warm"); err != nil { // connections made, the store's reads done
			return err
		}
		// At least 100 ms to the boundary: the denial cache's subscription, made in the
		// background, is up by then (it caches nothing until it is).
		next := time.Now().Add(100 * time.Millisecond).Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(next)) // to a second boundary: the figure is defined from one
		end := next.Add(time.Second)
		n, first, err := hammer(ctx, l, e.s.goroutines, end)
		if err != nil {
			return err
		}
		f[c.key], f[c.key+".span"] = float64(n), spanAllows(first, end)
	}
	return nil
}

// hammer sends requests of one identity through l from goroutines goroutines until end, and
// returns how many were admitted and when the first was sent.
func hammer(ctx context.Context, l *ratelimit.Limiter, goroutines int, end time.Time) (int64, time.Time, error) {
	var (
		admitted atomic.Int64
		wg       sync.WaitGroup
		once     sync.Once
		failed   error
		firsts   = make([]time.Time, goroutines) // when each goroutine sent its first
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for firsts[g] = time.Now(); time.Now().Before(end); {
				d, err := l.Allow(ctx, "hot")
				if err != nil {
					once.Do(func() { failed = err })
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	first := firsts[0]
	for _, t := range firsts {
		if t.Before(first) {
			first = t
		}
	}
	return admitted.Load(), first, failed
}

// worstOf are the figures whose worst round is a figure too, the target being on every run:
// the fewest admitted of the hot key (hot.worst; hot.nocache.worst without the denial cache),
// the most over-admitted (hot.over, what passed above what GCRA admits over the round's span:
// at most hotAllows), and the round that admitted
// the least of what GCRA admits over its load's span (hot.worst.span, beside that span's
// floor, hot.worst.spanfloor).
func worstOf(rounds []figures, med figures) {
	if _, ok := rounds[0]["hot.gcra"]; !ok {
		return
	}
	worst, nocache, over := rounds[0]["hot.gcra"], rounds[0]["hot.nocache"], 0.0
	span, spanFloor := rounds[0]["hot.gcra"], rounds[0]["hot.gcra.span"]
	for _, f := range rounds {
		worst, nocache = min(worst, f["hot.gcra"]), min(nocache, f["hot.nocache"])
		over = max(over, f["hot.gcra"]-f["hot.gcra.span"])     // the span's floor rounds up: above it is over
		if f["hot.gcra"]*spanFloor < span*f["hot.gcra.span"] { // a lower ratio
			span, spanFloor = f["hot.gcra"], f["hot.gcra.span"]
		}
	}
	med["hot.worst"], med["hot.nocache.worst"], med["hot.over"] = worst, nocache, over
	med["hot.worst.span"], med["hot.worst.spanfloor"] = span, spanFloor
}
