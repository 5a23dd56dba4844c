//go:build !race

package ratelimit_test

// raceDetector reports whether the tests run under the race detector (see race_on_test.go).
const raceDetector = false

// raceShrink divides the size of a test that loops for volume alone (see race_on_test.go).
const raceShrink = 1
