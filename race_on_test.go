//go:build race

package ratelimit_test

// raceDetector reports whether the tests run under the race detector, whose sync.Pool drops a
// quarter of what it is given and whose slower calls share fewer timers: allocation counts are
// then not the program's.
const raceDetector = true
