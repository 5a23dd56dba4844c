//go:build !race

package ratelimit_test

// raceDetector reports whether the tests run under the race detector (see race_on_test.go).
const raceDetector = false
