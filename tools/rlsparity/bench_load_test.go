package rlsparity

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// benchKeys are the descriptor keys of the benchmark's domain, a rule each.
var benchKeys = []string{"k1", "k2", "k3"}

// benchValues is how many values each descriptor key cycles through.
const benchValues = 1000

// benchRequest is a call of the benchmark's domain with n descriptors, the i-th of a caller.
func benchRequest(n, i int) *rlsv3.RateLimitRequest {
	r := &rlsv3.RateLimitRequest{Domain: "bench"}
	v := strconv.Itoa(i % benchValues)
	for _, k := range benchKeys[:n] {
		r.Descriptors = append(r.Descriptors, &rlcommon.RateLimitDescriptor{
			Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: k, Value: v}},
		})
	}
	return r
}

// tally is what a server answered under load: every call's latency, as its caller saw it, and
// how the calls ended.
type tally struct {
	latencies []time.Duration
	elapsed   time.Duration // the load's time, from its start to the end of its last call
	cpu       time.Duration // the server's CPU time meanwhile, user and system
	redisCPU  time.Duration // Redis's CPU time meanwhile (INFO cpu), user and system
	loadCPU   time.Duration // the load generator's (this process's) CPU time meanwhile
	ok        int           // answered OK overall
	over      int           // answered OVER_LIMIT overall
	errs      int           // failed (a gRPC error, the caller's timeout included)
	timeouts  int           // of errs, those the caller's timeout ended
	lastErr   error
}

// add adds o to t.
func (t *tally) add(o tally) {
	t.latencies = append(t.latencies, o.latencies...)
	t.elapsed += o.elapsed
	t.cpu += o.cpu
	t.redisCPU += o.redisCPU
	t.loadCPU += o.loadCPU
	t.ok, t.over, t.errs, t.timeouts = t.ok+o.ok, t.over+o.over, t.errs+o.errs, t.timeouts+o.timeouts
	if o.lastErr != nil {
		t.lastErr = o.lastErr
	}
}

func (t *tally) calls() int { return len(t.latencies) }

// rate is the calls answered per second.
func (t *tally) rate() float64 { return float64(t.calls()) / t.elapsed.Seconds() }

// cpuPerCall is the server's CPU time per call.
func (t *tally) cpuPerCall() time.Duration { return t.perCall(t.cpu) }

// perCall is d per call answered.
func (t *tally) perCall(d time.Duration) time.Duration {
	if t.calls() == 0 {
		return 0
	}
	return d / time.Duration(t.calls())
}

// quantile is the latency below which the share q of the calls' are; it sorts them.
func (t *tally) quantile(q float64) time.Duration {
	if len(t.latencies) == 0 {
		return 0
	}
	slices.Sort(t.latencies)
	return t.latencies[min(len(t.latencies)-1, int(q*float64(len(t.latencies))))]
}

// drive calls ShouldRateLimit with n descriptors from callers goroutines, over the clients in
// turn, for about d (a measuring period: the calls in flight then finish, each within
// callTimeout), and tallies the answers.
func drive(ctx context.Context, clients []rlsv3.RateLimitServiceClient, callers, n int, d, callTimeout time.Duration) tally {
	var (
		stop atomic.Bool
		wg   sync.WaitGroup
		mu   sync.Mutex
		all  tally
	)
	start := time.Now()
	for g := range callers {
		wg.Go(func() {
			c := clients[g%len(clients)]
			var mine tally
			for i := g * 7919; !stop.Load(); i++ { // each caller starts at values of its own
				r := benchRequest(n, i)
				cctx, cancel := context.WithTimeout(ctx, callTimeout)
				t0 := time.Now()
				resp, err := c.ShouldRateLimit(cctx, r)
				mine.latencies = append(mine.latencies, time.Since(t0))
				timedOut := cctx.Err() != nil
				cancel()
				switch {
				case err != nil:
					mine.errs++
					mine.lastErr = err
					if timedOut {
						mine.timeouts++
					}
				case resp.OverallCode == rlsv3.RateLimitResponse_OK:
					mine.ok++
				default:
					mine.over++
				}
			}
			mu.Lock()
			all.add(mine)
			mu.Unlock()
		})
	}
	time.Sleep(d) // a measuring period, not a wait for an event
	stop.Store(true)
	wg.Wait()
	all.elapsed = time.Since(start)
	return all
}

// The tally's figures: the quantiles of its latencies, its rate, its CPU per call, and add.
func TestTally(t *testing.T) {
	var a, b tally
	for i := 1; i <= 60; i++ {
		a.latencies = append(a.latencies, time.Duration(i)*time.Millisecond)
	}
	for i := 100; i > 60; i-- { // out of order: quantile sorts
		b.latencies = append(b.latencies, time.Duration(i)*time.Millisecond)
	}
	a.elapsed, b.elapsed = time.Second, time.Second
	a.cpu, b.cpu = 30*time.Millisecond, 20*time.Millisecond
	b.errs, b.lastErr = 2, context.DeadlineExceeded
	a.add(b)
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0, time.Millisecond}, {0.5, 51 * time.Millisecond}, {0.99, 100 * time.Millisecond}, {1, 100 * time.Millisecond}} {
		if got := a.quantile(c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if a.calls() != 100 || a.rate() != 50 || a.cpuPerCall() != 500*time.Microsecond || a.errs != 2 || a.lastErr == nil {
		t.Errorf("calls %d, rate %v/s, CPU %v a call, errs %d (%v); want 100, 50/s, 500µs, 2",
			a.calls(), a.rate(), a.cpuPerCall(), a.errs, a.lastErr)
	}
	var empty tally
	if empty.quantile(0.99) != 0 || empty.cpuPerCall() != 0 {
		t.Error("an empty tally has figures")
	}
}
