// Command benchtable is the measuring instrument of ratelimit's performance targets. It prints
// one table: each figure beside its floor measured in the same run (a trivial EVALSHA of
// "return 1", PING, and the like), their ratio, the target and PASS or MISS, under a line that
// describes the machine.
//
//	make bench                                   # go run ./tools/benchtable -out docs/results.md
//	go run ./tools/benchtable -rounds 5 -d 2s -v
//	go run ./tools/benchtable -only calendar -out docs/results.md   # issue 36's target alone
//	go run ./tools/benchtable -only holds -out docs/results.md      # issue 35's (Reserve, Settle)
//	go run ./tools/benchtable -only tail -out docs/results.md       # issue 39's (HTTP tail, hot key)
//
// With -out it also writes its section of the results file, docs/results.md under make bench
// (loadgen.WriteSection): the date, the machine, Go, Redis and go-redis, the load, and every
// figure with its key, floor and ratio. Issue 36's target (a calendar policy beside a fixed
// window of the same count, calendar.go) has a section of its own there, "calendar", which
// every run writes and `-only calendar` writes alone, measuring nothing else; so has issue 35's
// (Reserve and Settle beside a check, holds.go), "bench-holds", with `-only holds`; and so
// has issue 39's (the HTTP runs' p50, p99 and p99.9, http.go, and one hot identity, hotkey.go),
// "bench-tail", with `-only tail`.
// The documents take their measured figures from that file, and a test of the root module
// (TestDocFiguresAreInResults) fails when one they mark is not in it.
//
// It starts a redis-server of its own on a loopback port (through internal/testing/redistest) and
// stops it when it ends. The machine is assumed to be noisy, so every timed figure is taken
// in each of -rounds rounds, right after its floor, and the table shows medians; the ratios,
// not the absolute figures, are what the targets are about. The figures are measurements,
// never assertions: the program fails only when it cannot measure (a check that errs or is
// denied, a server that does not start).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// settings are the command's flags.
type settings struct {
	rounds     int           // rounds of every timed figure
	phase      time.Duration // length of each latency and throughput phase
	httpPhase  time.Duration // length of each HTTP load run
	goroutines int           // concurrent callers of the throughput figures
	keys       int           // identities the callers cycle through
	identities int           // identities of the used_memory figure
	verbose    bool          // also print where Redis spends its time per check
	out        string        // the results file to write, "" for none
	note       string        // what the results file says of the machine's load
	only       string        // "" for every figure, or the name of a table apart for its alone
}

// The values of -only: the names of the tables apart (see apart), each taking its figures alone.
const (
	onlyCalendar = "calendar" // issue 36's (calendarTable)
	onlyHolds    = "holds"    // issue 35's (holdsTable)
	onlyTail     = "tail"     // issue 39's tail and hot key (tailTable)
)

func main() {
	// testing.Benchmark reads the test.* flags of flag.CommandLine; they stay out of -h.
	testing.Init()
	if err := flag.Set("test.benchtime", "300ms"); err != nil {
		panic(err) // registered by testing.Init
	}
	var s settings
	fs := flag.NewFlagSet("benchtable", flag.ExitOnError)
	fs.IntVar(&s.rounds, "rounds", 3, "rounds of every timed figure; the table shows medians")
	fs.DurationVar(&s.phase, "d", time.Second, "length of each latency and throughput phase")
	fs.DurationVar(&s.httpPhase, "http", 2*time.Second, "length of each HTTP load run")
	fs.IntVar(&s.goroutines, "goroutines", 64, "concurrent callers of the throughput figures")
	fs.IntVar(&s.keys, "keys", 10_000, "identities the callers cycle through")
	fs.IntVar(&s.identities, "identities", 100_000, "identities of the used_memory figure")
	fs.BoolVar(&s.verbose, "v", false, "also print the Redis commands of one check and their time")
	fs.StringVar(&s.out, "out", "", "also write the results file (Markdown) here, e.g. docs/results.md")
	fs.StringVar(&s.note, "note", "", "what the results file says of the machine's load, beside its load average")
	fs.StringVar(&s.only, "only", "", `"calendar", "holds" or "tail": take and write only issue 36's figures (a calendar policy beside a fixed window), issue 35's (Reserve and Settle beside a check) or issue 39's (the HTTP tail and one hot identity)`)
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	if s.only != "" && !slices.ContainsFunc(apart, func(a apartTable) bool { return a.name == s.only }) {
		fmt.Fprintf(os.Stderr, "benchtable: -only %q: want %q, %q or %q (or nothing, for every figure)\n", s.only, onlyCalendar, onlyHolds, onlyTail)
		os.Exit(2)
	}
	if s.rounds < 1 || s.keys < 1 || s.goroutines < 1 || s.identities < 1 {
		fmt.Fprintln(os.Stderr, "benchtable: -rounds, -keys, -goroutines and -identities must be at least 1")
		os.Exit(2)
	}
	if err := run(s); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// takes reports whether the run takes the figures of the table apart of that name (see apart):
// every run but one -only another.
func (s settings) takes(name string) bool { return s.only == "" || s.only == name }

// run starts Redis, measures every figure and prints the table.
func run(s settings) error {
	start := time.Now()
	loadStart := loadgen.LoadAverage()
	addr, stop, err := redistest.Start()
	if err != nil {
		return err
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "benchtable: stopping redis-server:", err)
		}
	}()
	ctx := context.Background()
	e, err := newEnv(ctx, addr, s)
	if err != nil {
		return err
	}
	defer e.close()

	mem := figures{}
	if s.only == "" {
		fmt.Fprintf(os.Stderr, "benchtable: used_memory per identity (%d identities)\n", s.identities)
		if mem, err = memoryFigures(ctx, e); err != nil {
			return err
		}
	}
	var rounds []figures
	for r := range s.rounds {
		fmt.Fprintf(os.Stderr, "benchtable: round %d of %d\n", r+1, s.rounds)
		f, err := e.round(ctx, r)
		if err != nil {
			return fmt.Errorf("round %d: %w", r+1, err)
		}
		rounds = append(rounds, f)
	}
	med := loadgen.Medians(rounds)
	worstOf(rounds, med)
	for k, v := range mem {
		med[k] = v
	}

	what := "" // of the run
	if s.only != "" {
		what = fmt.Sprintf("-only %s: these figures alone; ", s.only)
	}
	info := loadgen.Run{
		When:    start,
		Machine: machine(ctx, e),
		How: fmt.Sprintf("%smedians of %d rounds; Redis on loopback; %d goroutines over %d identities; run took %s",
			what, s.rounds, s.goroutines, s.keys, time.Since(start).Round(time.Second)),
		Load: fmt.Sprintf("1-minute load average %s at the start, %s at the end", loadStart, loadgen.LoadAverage()),
	}
	if s.note != "" {
		info.Load += "; " + s.note
	}
	fmt.Println(info.Machine)
	fmt.Printf("%s\n%s\n\n", info.How, info.Load)
	printed := s.only == ""
	if printed {
		printTable(os.Stdout, table, med)
	}
	for _, a := range apart {
		if s.takes(a.name) {
			if printed {
				fmt.Println()
			}
			printTable(os.Stdout, a.table, med)
			printed = true
		}
	}
	if s.out != "" {
		if s.only == "" {
			if err := writeResults(s.out, info, med); err != nil {
				return err
			}
		}
		for _, a := range apart {
			if s.takes(a.name) {
				if err := writeApartResults(s.out, a, info, med); err != nil {
					return err
				}
			}
		}
		fmt.Fprintln(os.Stderr, "benchtable: wrote", s.out)
	}
	if s.verbose {
		fmt.Println()
		printBreakdown(os.Stdout, e.breakdown)
	}
	return nil
}

// machine describes the machine, the toolchain and the server.
func machine(ctx context.Context, e *env) string {
	redisVersion := "redis ?"
	if info, err := e.client.Info(ctx, "server", "memory").Result(); err == nil {
		redisVersion = "redis " + infoField(info, "redis_version") + " (" + infoField(info, "mem_allocator") + ")"
	}
	return fmt.Sprintf("machine: %s, %d cores (GOMAXPROCS %d), %s %s/%s, %s, go-redis %s, HTTP load: %s",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH,
		redisVersion, redis.Version(), e.loadName)
}
