// Package rlsparity holds the parity test of the rate limit service (module rls) against the
// reference server, envoyproxy/ratelimit, built from the Go module proxy: same configuration,
// same requests, one Redis, the same answers. It runs with RLSPARITY=1, which CI sets (see
// parity_test.go and .ci/run): building the reference takes a while the first time. Beside it, TestBench
// (bench_test.go, only with RLSBENCH=1) measures both servers under the same load, and with
// Redis killed, and writes the section rls of docs/results.md.
package rlsparity
