package ratelimit_test

import "github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"

// fakeClock is the tests' clock; it moves only when told to.
type fakeClock = fakeclock.Clock

// t0 is aligned to every window the tests use (3 s, 4 s, 1 min, 1 h), so fixed windows start
// at t0.
var t0 = fakeclock.T0

func newFakeClock() *fakeClock { return fakeclock.New(t0) }
