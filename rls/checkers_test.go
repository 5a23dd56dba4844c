//go:build go1.25

package rls

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// The checkers run every check handed to them: beyond maxCheckers at once, on goroutines of
// their own; the next checks on the checkers, which end once idle for checkerIdle (the fake
// clock of a synctest bubble).
func TestCheckersRunEveryCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCheckers()
		var (
			wg  sync.WaitGroup
			ran atomic.Int32
		)
		release := make(chan struct{})
		for range maxCheckers + 10 {
			wg.Add(1)
			c.do(func() { defer wg.Done(); <-release; ran.Add(1) })
		}
		synctest.Wait()
		if n := c.n.Load(); n != maxCheckers {
			t.Errorf("%d checkers with %d checks blocked, want %d", n, maxCheckers+10, maxCheckers)
		}
		close(release)
		wg.Wait()
		synctest.Wait() // every checker waits for a check
		for range 10 {
			wg.Add(1)
			c.do(func() { defer wg.Done(); ran.Add(1) })
		}
		wg.Wait()
		if got := ran.Load(); got != maxCheckers+20 {
			t.Errorf("%d checks ran, want %d", got, maxCheckers+20)
		}
		if n := c.n.Load(); n != maxCheckers {
			t.Errorf("%d checkers after the checks, want the %d kept", n, maxCheckers)
		}
		time.Sleep(checkerIdle + time.Second)
		synctest.Wait()
		if n := c.n.Load(); n != 0 {
			t.Errorf("%d checkers still running %v after the last check", n, checkerIdle)
		}
	})
}
