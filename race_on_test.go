//go:build race

package ratelimit_test

// raceDetector reports whether the tests run under the race detector, whose sync.Pool drops a
// quarter of what it is given and whose slower calls share fewer timers: allocation counts are
// then not the program's.
const raceDetector = true

// raceShrink divides the size of a test that loops for volume alone, such as a flood of fresh
// identities far past a store's bound, under the race detector, which makes every step some
// ten times slower.
const raceShrink = 10
