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

// hotFigures hammers one identity with e.s.goroutines goroutines for one second from a second
// boundary, through a store with the default options (its denial cache on) and through one
// with WithDenialCache(0), and records how many requests each admitted: hot.gcra and
// hot.nocache, and hot.allows, the floor. Each round's identities are fresh.
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
		n, err := hammer(ctx, l, e.s.goroutines, next.Add(time.Second))
		if err != nil {
			return err
		}
		f[c.key] = float64(n)
	}
	return nil
}

// hammer sends requests of one identity through l from goroutines goroutines until end, and
// returns how many were admitted.
func hammer(ctx context.Context, l *ratelimit.Limiter, goroutines int, end time.Time) (int64, error) {
	var (
		admitted atomic.Int64
		wg       sync.WaitGroup
		once     sync.Once
		failed   error
	)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
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
	return admitted.Load(), failed
}

// worstOf are the figures whose worst round is a figure too, the target being on every run:
// the fewest admitted of the hot key (hot.worst) and the most over-admitted (hot.over, what
// passed above hotAllows).
func worstOf(rounds []figures, med figures) {
	if _, ok := rounds[0]["hot.gcra"]; !ok {
		return
	}
	worst, over := rounds[0]["hot.gcra"], 0.0
	for _, f := range rounds {
		worst = min(worst, f["hot.gcra"])
		over = max(over, f["hot.gcra"]-hotAllows)
	}
	med["hot.worst"], med["hot.over"] = worst, over
}
