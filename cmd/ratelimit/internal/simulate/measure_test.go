package simulate_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/cmd/ratelimit/internal/simulate"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// TestMeasureChooser measures the figures of the "Which algorithm?" table (docs/policies.md)
// and prints them as a Markdown table, for the one policy of the pictures (10 per second,
// burst 10).
// The figures are:
//
//   - from the simulation over the memory store: what each algorithm refuses of a steady
//     stream at the limit, and the most it admits in any one window of the boundary burst and
//     of the 3× overload;
//   - Redis time per check: usec_per_call of EVALSHA in INFO commandstats (the time inside
//     Redis, network excluded) over checks of 100 identities, each at its limit and then at
//     three times it, next to a trivial script: the least of 20 rounds of 500 checks.
//
// It asserts nothing about them, since they depend on the machine, and it runs only when
// asked; it writes them to its section of the repository's results file, docs/results.md
// (beside make bench's), dated, with the machine and its load (RATELIMIT_MEASURE_NOTE says
// more of it), where docs/policies.md takes them from:
//
//	RATELIMIT_MEASURE=1 go test -run TestMeasureChooser -v ./cmd/ratelimit/internal/simulate
func TestMeasureChooser(t *testing.T) {
	if os.Getenv("RATELIMIT_MEASURE") != "1" {
		t.Skip("set RATELIMIT_MEASURE=1 to measure the figures of the algorithm table of docs/policies.md")
	}
	start, loadStart := time.Now(), loadgen.LoadAverage()
	ctx := context.Background()
	client := redistest.Standalone(t)
	pics, err := simulate.Pictures(ctx, simulate.Memory)
	if err != nil {
		t.Fatal(err)
	}
	trace := func(scenario string, alg algorithms.Algorithm) simulate.Trace {
		for _, p := range pics {
			for _, tr := range p.Traces {
				if p.File == scenario+".svg" && tr.Algorithm == alg {
					return tr
				}
			}
		}
		t.Fatalf("no trace of %s in %s", alg.Name(), scenario)
		return simulate.Trace{}
	}

	// The times: every workload in turn, round after round, so that other work on the machine
	// weighs on all of them alike; each keeps its least disturbed round.
	trivial := redis.NewScript("return 1")
	workloads := []func(){func() {
		if err := trivial.Run(ctx, client, []string{"x"}).Err(); err != nil {
			t.Fatal(err)
		}
	}}
	for _, alg := range simulate.Algorithms() {
		workloads = append(workloads,
			checker(t, client, alg, simulate.Window/simulate.Limit),
			checker(t, client, alg, simulate.Window/(3*simulate.Limit)))
	}
	usec := leastUsecPerCall(t, client, workloads)

	var b strings.Builder
	window := fmt.Sprintf("%d s", simulate.Window/time.Second)
	fmt.Fprintf(&b, "\n| algorithm | refused of a steady stream at the limit | most admitted in any %s: boundary burst | most admitted in any %[1]s: 3× overload | Redis µs per check: at the limit / at 3× |\n",
		window)
	b.WriteString("|---|---|---|---|---|\n")
	for i, alg := range simulate.Algorithms() {
		fmt.Fprintf(&b, "| `%s` | %d of %d | %d | %d | %.1f / %.1f µs |\n", simulate.GoName(alg),
			trace("steady", alg).Refused(), len(trace("steady", alg).Requests),
			simulate.MostWithin(trace("boundary-burst", alg).AdmittedAt(), simulate.Window),
			simulate.MostWithin(trace("overload", alg).AdmittedAt(), simulate.Window),
			usec[1+2*i], usec[2+2*i])
	}
	fmt.Fprintf(&b, "\nA trivial script (return 1): %.1f µs per EVALSHA.\n", usec[0])
	t.Log(b.String())

	run := loadgen.Run{
		When:    start,
		Machine: fmt.Sprintf("machine: %d cores, %s %s/%s, redis %s", runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, redisVersion(t, client)),
		How:     fmt.Sprintf("the simulation on the fake clock; the Redis times the least of 20 rounds of 500 checks over 100 identities; took %s", time.Since(start).Round(time.Second)),
		Load:    fmt.Sprintf("1-minute load average %s at the start, %s at the end", loadStart, loadgen.LoadAverage()),
	}
	if note := os.Getenv("RATELIMIT_MEASURE_NOTE"); note != "" {
		run.Load += "; " + note
	}
	results := filepath.Join("..", "..", "..", "..", "docs", "results.md") // this package's directory is the test's
	if err := loadgen.WriteSection(results, "chooser", "TestMeasureChooser: the \"Which algorithm?\" table of docs/policies.md (10 per second, burst 10)", run, strings.TrimPrefix(b.String(), "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
}

// redisVersion returns the server's redis_version.
func redisVersion(t *testing.T, client *redis.Client) string {
	info, err := client.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	return loadgen.InfoField(info, "redis_version")
}

// checker returns a check of alg's policy, for timing: 100 identities checked in turn, the
// clock moving step/100 between checks, so each identity is checked every step. Every
// identity is brought to its steady state first (a full log, a bucket in use), and the
// script is loaded. The denial cache is off: every check, the refused ones too, is a call of
// the function (with the cache on by default, a refused identity's checks never reach Redis).
func checker(t *testing.T, client *redis.Client, alg algorithms.Algorithm, step time.Duration) func() {
	const identities = 100
	clock := fakeclock.New(fakeclock.T0)
	l, err := ratelimit.New(ratelimit.NewRedisStore(client, ratelimit.WithClock(clock), ratelimit.WithPrefix(redistest.Prefix(t)),
		ratelimit.WithDenialCache(0)), simulate.Policy(alg))
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	check := func() {
		clock.Advance(step / identities)
		if _, err := l.Allow(context.Background(), "id"+strconv.Itoa(i%identities)); err != nil {
			t.Fatal(err)
		}
		i++
	}
	for range 10 * identities {
		check()
	}
	return check
}

// leastUsecPerCall returns, for each workload, usec_per_call of FCALL (EVALSHA for the trivial script) over 500 calls: the
// least of 20 rounds, in each of which every workload runs in turn. Rounds this short are
// often undisturbed by other work, even on a busy machine.
func leastUsecPerCall(t *testing.T, client *redis.Client, workloads []func()) []float64 {
	least := make([]float64, len(workloads))
	for i := range least {
		least[i] = math.Inf(1)
	}
	for range 20 {
		for i, f := range workloads {
			f() // the function is loaded: every call measured is an FCALL
			if err := client.ConfigResetStat(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			for range 500 {
				f()
			}
			least[i] = min(least[i], usecPerCall(t, client))
		}
	}
	return least
}

// usecPerCall returns usec_per_call of the script or function calls in INFO commandstats:
// FCALL for a check, EVALSHA for the trivial script.
func usecPerCall(t *testing.T, client *redis.Client) float64 {
	info, err := client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_fcall:")
		if !ok {
			rest, ok = strings.CutPrefix(line, "cmdstat_evalsha:")
		}
		if !ok {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(field, "usec_per_call="); ok {
				usec, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return usec
			}
		}
	}
	t.Fatalf("INFO commandstats has no usec_per_call of FCALL or EVALSHA:\n%s", info)
	return 0
}
