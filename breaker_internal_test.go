package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// A failed dial opens the breaker at once, unless it began before the breaker last closed: a
// dial refused while Redis was down can fail after a probe found Redis back (it began before,
// or its goroutine ran late under load), and must not open the breaker again (seen in
// TestOutageUnderLoad, two make test at once).
func TestBreakerIgnoresStaleDialFailures(t *testing.T) {
	clock := fakeclock.New(fakeclock.T0)
	b := &breaker{failures: 5, cooldown: 100 * time.Millisecond, clock: clock}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	before := b.closings.Load() // a dial begins while Redis is down
	b.trip(refused, before)
	if !b.open.Load() {
		t.Fatal("a refused dial did not open the breaker")
	}
	clock.Advance(firstProbe)
	ok, probe := b.acquire()
	if !ok || !probe {
		t.Fatalf("acquire after the first probe's wait: %v, %v; want the probe", ok, probe)
	}
	b.release(nil, probe) // Redis is back
	if b.open.Load() {
		t.Fatal("a successful probe did not close the breaker")
	}
	b.trip(refused, before) // the dial that began before, failing late
	if b.open.Load() {
		t.Fatal("a dial that began before the breaker closed opened it again")
	}
	b.trip(refused, b.closings.Load()) // a dial that began after
	if !b.open.Load() {
		t.Fatal("a refused dial that began after the breaker closed did not open it")
	}
}

// A call whose client went away tells nothing of the store: it breaks no run of failures
// (before, it reset the run as a success did, so that during an outage the clients that left
// before their deadline kept the breaker from ever opening), and a probe canceled so leaves
// the breaker open, its next probe due at once.
func TestBreakerCanceledCallsTellNothing(t *testing.T) {
	clock := fakeclock.New(fakeclock.T0)
	var logged strings.Builder
	b := &breaker{failures: 3, cooldown: 100 * time.Millisecond, clock: clock, log: logs{slog.New(slog.NewTextHandler(&logged, nil))}}
	timeout := errors.New("i/o timeout")
	canceled := fmt.Errorf("ratelimit: redis check: %w", context.Canceled)
	for range 2 {
		b.release(timeout, false)
		b.release(canceled, false)
	}
	b.release(timeout, false)
	if !b.open.Load() {
		t.Fatal("3 failures, with canceled calls between them, did not open the breaker")
	}
	clock.Advance(firstProbe)
	if ok, probe := b.acquire(); !ok || !probe {
		t.Fatalf("acquire after the first probe's wait: %v, %v; want the probe", ok, probe)
	}
	b.release(canceled, true)
	if !b.open.Load() {
		t.Fatal("a canceled probe closed the breaker")
	}
	if ok, probe := b.acquire(); !ok || !probe {
		t.Fatalf("acquire after a canceled probe: %v, %v; want the next probe at once", ok, probe)
	}
	b.release(canceled, true)
	b.acquire()
	if n := strings.Count(logged.String(), "half-open"); n != 1 {
		t.Errorf("three probes, two canceled, logged half-open %d times; want once:\n%s", n, logged.String())
	}
}
