package rls

import (
	"sync/atomic"
	"time"
)

// checkers are the goroutines that run a call's checks beside its own (Server.run), kept
// between calls: a goroutine made for each check would grow its stack, from the smallest, to
// the depth of a store call every time (runtime.morestack, a good part of a call's CPU).
// Each waits checkerIdle for its next check and then ends; beyond maxCheckers, a check gets
// a goroutine of its own.
type checkers struct {
	jobs chan func()
	n    atomic.Int32 // the checkers running
}

const (
	maxCheckers = 256
	checkerIdle = 10 * time.Second
)

func newCheckers() checkers { return checkers{jobs: make(chan func())} }

// do runs f on a checker that waits for one, or on a new goroutine.
func (c *checkers) do(f func()) {
	select {
	case c.jobs <- f:
		return
	default:
	}
	if c.n.Add(1) > maxCheckers {
		c.n.Add(-1)
		go f()
		return
	}
	go c.work(f)
}

// work runs f, then the checks it is handed, until none comes for checkerIdle.
func (c *checkers) work(f func()) {
	defer c.n.Add(-1)
	idle := time.NewTimer(checkerIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(checkerIdle)
		select {
		case f = <-c.jobs:
		case <-idle.C:
			return
		}
	}
}
