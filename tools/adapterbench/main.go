// Command adapterbench measures the tail of a request through every adapter (issue 39): for
// net/http, Gin, Echo v4 and v5, Fiber v2 and v3, and gRPC (unary), the latency of a request at
// p50, p99 and p99.9 under load, through the bare handler, through the floor (the trivial
// script, EVALSHA of "return 1" on the client's key, as a middleware of the framework, then
// the handler) and through the adapter (one policy that never denies, then the handler), and
// the ratio of the adapter's to the floor's, with the target of 1.1×.
//
//	make bench                            # cd tools/adapterbench && go run . -out ../../docs/results.md
//	go run . -rounds 3 -d 5s -only gin    # one framework, printed
//
// Each framework serves the three routes on one loopback listener; the HTTP load is wrk's
// when it is installed (else a Go generator: see loadgen.HTTP), gRPC's a Go generator over a
// few connections, every call timed. Every figure is a median of -rounds rounds, each round
// taking the bare handler, the floor and the adapter in turn, each after a short unmeasured
// load, in an order that moves by one each round, so that a load that moves on the machine
// weighs on the three alike. With -out it writes the section "bench-adapters" of
// the results file. It starts a redis-server of its own on a loopback port (through
// internal/testing/redistest) and stops it when it ends. A measure, not a test: it fails only
// when it cannot measure (a request that fails or is denied, a server that does not start).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// settings are the command's flags.
type settings struct {
	rounds int           // rounds of every figure
	d      time.Duration // length of each load run
	conns  int           // connections of the load (HTTP) and callers (gRPC)
	only   string        // "" for every framework, or the name of one
	out    string        // the results file to write, "" for none
	note   string        // what the results file says of the machine's load
}

func main() {
	var s settings
	flag.IntVar(&s.rounds, "rounds", 3, "rounds of every figure (medians)")
	flag.DurationVar(&s.d, "d", 5*time.Second, "length of each load run")
	flag.IntVar(&s.conns, "conns", 64, "connections of the HTTP load, callers of the gRPC one")
	flag.StringVar(&s.only, "only", "", "measure one framework alone: "+strings.Join(names(), ", "))
	flag.StringVar(&s.out, "out", "", "write the section bench-adapters of this results file (with every framework only)")
	flag.StringVar(&s.note, "note", "", "what the results file says of the machine's load")
	flag.Parse()
	if err := run(s); err != nil {
		fmt.Fprintln(os.Stderr, "adapterbench:", err)
		os.Exit(1)
	}
}

// names are the frameworks' names, in the table's order.
func names() []string {
	var out []string
	for _, f := range frameworks {
		out = append(out, f.name)
	}
	return out
}

func run(s settings) error {
	if s.only != "" && !slices.Contains(names(), s.only) {
		return fmt.Errorf("-only %q: want one of %s", s.only, strings.Join(names(), ", "))
	}
	if s.only != "" && s.out != "" {
		return fmt.Errorf("-only and -out: the results file takes every framework's figures at once")
	}
	start, loadStart := time.Now(), loadgen.LoadAverage()
	addr, stop, err := redistest.Start()
	if err != nil {
		return err
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "adapterbench: stopping redis-server:", err)
		}
	}()
	ctx := context.Background()
	e, err := newEnv(ctx, addr, s)
	if err != nil {
		return err
	}
	defer e.client.Close()

	var rounds []figures
	for r := range s.rounds {
		f := figures{}
		for _, fw := range frameworks {
			if s.only != "" && fw.name != s.only {
				continue
			}
			fmt.Fprintf(os.Stderr, "adapterbench: round %d of %d, %s\n", r+1, s.rounds, fw.name)
			if err := e.measure(ctx, fw, r, f); err != nil {
				return fmt.Errorf("round %d, %s: %w", r+1, fw.name, err)
			}
		}
		rounds = append(rounds, f)
	}
	med := loadgen.Medians(rounds)

	redisVersion := "?"
	if info, err := e.client.Info(ctx, "server").Result(); err == nil {
		redisVersion = loadgen.InfoField(info, "redis_version")
	}
	info := loadgen.Run{
		When: start,
		Machine: fmt.Sprintf("machine: %d cores (GOMAXPROCS %d), %s %s/%s, redis %s, go-redis %s, %s; HTTP load: %s, gRPC load: Go generator over %d connections",
			runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, redisVersion, redis.Version(), versions(), e.loadName, grpcConns),
		How: fmt.Sprintf("medians of %d rounds, each taking the bare handler, the floor and the adapter in turn (the order moving by one each round) for %s each, after an unmeasured load of a fifth of that (at most 1 s); %d connections (gRPC: callers); Redis on loopback; run took %s",
			s.rounds, s.d, s.conns, time.Since(start).Round(time.Second)),
		Load: fmt.Sprintf("1-minute load average %s at the start, %s at the end", loadStart, loadgen.LoadAverage()),
	}
	if s.note != "" {
		info.Load += "; " + s.note
	}
	body := markdown(med, s.only)
	fmt.Printf("%s\n%s\n%s\n\n%s", info.Machine, info.How, info.Load, body)
	if s.out != "" {
		if err := loadgen.WriteSection(s.out, "bench-adapters", "make bench (tools/adapterbench): the tail through every adapter (issue 39)", info, body); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "adapterbench: wrote", s.out)
	}
	return nil
}

// frameworkModules are the frameworks' modules, whose versions the results name.
var frameworkModules = []string{"github.com/gin-gonic/gin", "github.com/labstack/echo/v4", "github.com/labstack/echo/v5",
	"github.com/gofiber/fiber/v2", "github.com/gofiber/fiber/v3", "google.golang.org/grpc"}

// versions names the frameworks' releases built in.
func versions() string {
	var out []string
	for _, m := range frameworkModules {
		out = append(out, strings.TrimPrefix(m, "github.com/")+" "+loadgen.ModuleVersion(m))
	}
	return strings.Join(out, ", ")
}

// figures are one round's measurements, by key (see key).
type figures = loadgen.Figures
