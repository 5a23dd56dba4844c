package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

// The layout study (issue 23, items 1 and 3): -layout times the floors, today's library and
// the prototypes of protos.go from one goroutine and from -c goroutines; -mem measures
// used_memory per identity; -verify checks that the prototypes answer as the library does.

var (
	layoutTime = flag.Bool("layout", false, "layout study: Redis time per FCALL, 1 and -c goroutines")
	layoutMem  = flag.Bool("mem", false, "layout study: used_memory per identity")
	verify     = flag.Bool("verify", false, "layout study: prototypes' replies against the library's")
	conc       = flag.Int("c", 64, "goroutines of the saturated phase")
	memIDs     = flag.Int("ids", 100_000, "identities of the used_memory figures")
	benchLoop  = flag.Bool("rb", false, "layout study: Redis time per FCALL under redis-benchmark -c 1 (a warm tight loop)")
)

// The policies of the study: 10/s, 100/min, 1000/h (check.lua's policy strings).
var studyPolicies = []string{"gc:10:1000000:0:0", "gc:100:60000000:0:0", "gc:1000:3600000000:0:0"}

// memPolicies have intervals of 360 s, so that every key outlives the used_memory measure; a
// layout's bytes do not depend on the rate (a TAT is a 16-digit integer at any rate, and the
// remainder of L2 is below 1,000 at any rate).
var memPolicies = []string{"gc:10:3600000000:0:0", "gc:100:36000000000:0:0", "gc:1000:360000000000:0:0"}

// tags are the policies' tags in keys and hash fields: a code and six characters, as keys.go.
var tags = []string{"gcAAAAA0", "gcAAAAA1", "gcAAAAA2"}

// shape builds the keys and arguments of one call for an identity.
type shape func(id string) (keys []string, args []any)

func checkArgv(pols []string, extra ...string) []any {
	args := []any{"0", "1", "1", "0"}
	for _, p := range pols {
		args = append(args, p)
	}
	for _, e := range extra {
		args = append(args, e)
	}
	return args
}

// perKey: one key per policy, rl:{id}:tag (today's layout; L1, L2).
func perKey(pols []string) shape {
	return func(id string) ([]string, []any) {
		keys := make([]string, len(pols))
		for i := range pols {
			keys[i] = "rl:{" + id + "}:" + tags[i]
		}
		return keys, checkArgv(pols)
	}
}

// hashKey: one hash per identity, rl:{id}, a field per policy (L3).
func hashKey(pols []string, fields []string) shape {
	return func(id string) ([]string, []any) {
		return []string{"rl:{" + id + "}"}, checkArgv(pols, fields[:len(pols)]...)
	}
}

// short is L4's identity: "{" and 9 bytes of the identity's SHA-256 and "}" (11 bytes).
func short(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "{" + string(sum[:9]) + "}"
}

// shortKey: L4, one key per policy of 12 bytes: short(id) and a one-byte tag.
func shortKey(pols []string) shape {
	return func(id string) ([]string, []any) {
		keys := make([]string, len(pols))
		for i := range pols {
			keys[i] = short(id) + string(rune('a'+i))
		}
		return keys, checkArgv(pols)
	}
}

// shortHash: L4 with L3, one hash per identity under short(id), fields "a", "b", "c".
func shortHash(pols []string) shape {
	return func(id string) ([]string, []any) {
		return []string{short(id)}, checkArgv(pols, "a", "b", "c")[:4+2*len(pols)]
	}
}

type study struct {
	name  string
	src   string
	shape shape
	lru   bool // used_memory under maxmemory-policy volatile-lru (no shared integers)
}

// server is the private redis-server of a study, which fatal stops.
var server *exec.Cmd

// fatal stops the private server and exits: a deferred Kill does not run under os.Exit.
func fatal(args ...any) {
	if server != nil {
		server.Process.Kill()
	}
	fmt.Fprintln(os.Stderr, args...)
	os.Exit(1)
}

func startServer() (*exec.Cmd, *redis.Client) {
	probe := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", *port)})
	if probe.Ping(context.Background()).Err() == nil {
		panic(fmt.Sprintf("a server already listens on port %d", *port))
	}
	probe.Close()
	cmd := exec.Command("redis-server", "--port", fmt.Sprint(*port), "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	server = cmd
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", *port), PoolSize: *conc + 8})
	for i := 0; c.Ping(context.Background()).Err() != nil; i++ {
		if i > 100 {
			fatal("redis-server did not start")
		}
		time.Sleep(50 * time.Millisecond) // polls for the server's start
	}
	return cmd, c
}

// load loads each study's library as the function s<i>.
func load(ctx context.Context, c *redis.Client, ss []study) {
	for i, s := range ss {
		lib := fmt.Sprintf("s%d", i)
		src := "#!lua name=" + lib + "\n" + s.src + "\nredis.register_function('" + lib + "', function(k, a) return entry(k, a) end)\n"
		if err := c.Do(ctx, "FUNCTION", "LOAD", "REPLACE", src).Err(); err != nil {
			fatal(s.name, err)
		}
	}
}

func fcall(i int, keys []string, args []any) []any {
	out := []any{"FCALL", fmt.Sprintf("s%d", i), len(keys)}
	for _, k := range keys {
		out = append(out, k)
	}
	return append(out, args...)
}

func uptime() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func timeStudies() []study {
	p1, p3 := studyPolicies[:1], studyPolicies
	ret1 := "local function entry(K, A) return 1 end"
	return []study{
		{"F0 return 1 (1 key)", ret1, perKey(p1), false},
		{"F0 TIME+GET+SET PX, 1 key", tgsN(1), perKey(p1), false},
		{"F0 TIME+GET+SET PX, 3 keys", tgsN(3), perKey(p3), false},
		{"F0 TIME+MGET+SET PX, 3 keys", mgetN(3), perKey(p3), false},
		{"F0 TIME+GET+PEXPIRETIME+SET PXAT, 1 key", remN(1), perKey(p1), false},
		{"F0 TIME+GET+PEXPIRETIME+SET PXAT, 3 keys", remN(3), perKey(p3), false},
		{"F0 TIME+HMGET+HSET+PEXPIRE, 1 field", hashN(1), hashKey(p1, tags), false},
		{"F0 TIME+HMGET+HSET+PEXPIRE, 3 fields", hashN(3), hashKey(p3, tags), false},
		{"S1 F0 + reply table, 1 key", ladderReply, perKey(p1), false},
		{"S2 S1 + args, spec cache, expiry, 1 key", ladderArgs, perKey(p1), false},
		{"P0 prototype of L0 (S2 + GCRA), 1 policy", proto("P0"), perKey(p1), false},
		{"P0 prototype of L0, 3 policies", proto("P0"), perKey(p3), false},
		{"L0 library, 1 policy", current(), perKey(p1), false},
		{"L0 library, 3 policies", current(), perKey(p3), false},
		{"L1 MGET, 3 policies", proto("L1"), perKey(p3), false},
		{"L2 remainder, 1 policy", proto("L2"), perKey(p1), false},
		{"L2 remainder, 3 policies", proto("L2"), perKey(p3), false},
		{"L3 hash, 1 policy", proto("L3"), hashKey(p1, tags), false},
		{"L3 hash, 3 policies", proto("L3"), hashKey(p3, tags), false},
	}
}

// runLayoutTime measures usec_per_call of FCALL for every study, one goroutine then -c, in
// -r rounds of -n calls per phase, the studies in a rotated order each round.
func runLayoutTime() {
	ctx := context.Background()
	cmd, c := startServer()
	defer cmd.Process.Kill()
	ss := timeStudies()
	load(ctx, c, ss)
	cs := make([][][]any, len(ss))
	for i, s := range ss {
		cs[i] = make([][]any, 10000)
		for j := range cs[i] {
			k, a := s.shape(fmt.Sprintf("ip:203.0.%d.%d", j>>8, j&255))
			cs[i][j] = fcall(i, k, a)
		}
		if err := c.Do(ctx, cs[i][0]...).Err(); err != nil {
			fatal(s.name, err)
		}
	}
	// per study: usec and cpu of one goroutine, usec and cpu of -c goroutines
	res := map[int]*[4][]float64{}
	for r := 0; r < *rounds; r++ {
		fmt.Fprintf(os.Stderr, "round %d, load %s\n", r+1, uptime())
		for k := range ss {
			i := (k + r) % len(ss)
			if *only != "" && !strings.Contains(ss[i].name, *only) {
				continue
			}
			if res[i] == nil {
				res[i] = new([4][]float64)
			}
			x := res[i]
			u, cpu := phase(ctx, c, cs[i], 1)
			x[0], x[1] = append(x[0], u), append(x[1], cpu)
			u, cpu = phase(ctx, c, cs[i], *conc)
			x[2], x[3] = append(x[2], u), append(x[3], cpu)
		}
	}
	fmt.Printf("load at the end %s; %d rounds of %d calls per phase\n", uptime(), *rounds, *calls)
	fmt.Printf("usec: µs per FCALL (INFO commandstats); cpu: µs of the main thread's CPU per call (schedstat, all included)\n")
	fmt.Printf("%-44s %35s %35s\n", "", "1 goroutine", fmt.Sprintf("%d goroutines", *conc))
	fmt.Printf("%-44s %17s %17s %17s %17s\n", "", "usec min / med", "cpu min / med", "usec min / med", "cpu min / med")
	for i, s := range ss {
		x := res[i]
		if x == nil {
			continue
		}
		fmt.Printf("%-44s", s.name)
		for _, xs := range x {
			lo, med := stat(xs)
			fmt.Printf(" %8.2f %8.2f", lo, med)
		}
		fmt.Println()
	}
}

// runLayoutRB measures usec_per_call of FCALL for every study under redis-benchmark -c 1 -n
// -n: one connection calling back to back, so the server never idles (the lead's warm figure).
// Its __rand_int__ draws each key's identity separately: a call's keys are of different
// identities, which a standalone server allows and which finds state as often.
func runLayoutRB() {
	ctx := context.Background()
	cmd, c := startServer()
	defer cmd.Process.Kill()
	ss := timeStudies()
	load(ctx, c, ss)
	res, cpus := map[int][]float64{}, map[int][]float64{}
	for r := 0; r < *rounds; r++ {
		fmt.Fprintf(os.Stderr, "round %d, load %s\n", r+1, uptime())
		for k := range ss {
			i := (k + r) % len(ss)
			if *only != "" && !strings.Contains(ss[i].name, *only) {
				continue
			}
			keys, args := ss[i].shape("ip:__rand_int__")
			argv := []string{"-p", fmt.Sprint(*port), "-c", "1", "-n", fmt.Sprint(*calls), "-r", "10000", "-q"}
			for _, a := range fcall(i, keys, args) {
				argv = append(argv, fmt.Sprint(a))
			}
			c.FlushDB(ctx)
			c.ConfigResetStat(ctx)
			cpu0 := mainCPU()
			if out, err := exec.Command("redis-benchmark", argv...).CombinedOutput(); err != nil {
				fatal(ss[i].name, err, string(out))
			}
			cpu1 := mainCPU()
			res[i] = append(res[i], perFCALL(ctx, c))
			cpus[i] = append(cpus[i], float64(cpu1-cpu0)/1e3/float64(*calls))
		}
	}
	fmt.Printf("redis-benchmark -c 1 -n %d -r 10000, %d rounds; load at the end %s\n", *calls, *rounds, uptime())
	fmt.Printf("%-44s %17s %17s\n", "", "usec min / med", "cpu min / med")
	for i, s := range ss {
		if len(res[i]) == 0 {
			continue
		}
		lo, med := stat(res[i])
		clo, cmed := stat(cpus[i])
		fmt.Printf("%-44s %8.2f %8.2f %8.2f %8.2f\n", s.name, lo, med, clo, cmed)
	}
}

// phase empties the database, warms up, and returns the server's µs per FCALL over n calls
// from g goroutines cycling through the identities' calls (usec/calls of INFO commandstats),
// and the CPU time of its main thread per call (schedstat), which a preempted thread does not
// inflate.
func phase(ctx context.Context, c *redis.Client, cs [][]any, g int) (float64, float64) {
	c.FlushDB(ctx)
	drive(ctx, c, cs, g, 200*g)
	c.FlushDB(ctx)
	c.ConfigResetStat(ctx)
	cpu0 := mainCPU()
	drive(ctx, c, cs, g, *calls)
	cpu1 := mainCPU()
	return perFCALL(ctx, c), float64(cpu1-cpu0) / 1e3 / float64(*calls)
}

// perFCALL reads usec/calls of FCALL in INFO commandstats.
func perFCALL(ctx context.Context, c *redis.Client) float64 {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		fatal(err)
	}
	s := loadgen.CommandStats(info)["fcall"]
	if s.Calls < int64(*calls) {
		fatal("FCALL ran", s.Calls, "times, not", *calls)
	}
	return float64(s.Usec) / float64(s.Calls)
}

// mainCPU returns the CPU time, in ns, the private server's main thread has run.
func mainCPU() int64 {
	pid := server.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, pid))
	if err != nil {
		fatal(err)
	}
	n, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
	if err != nil {
		fatal(err)
	}
	return n
}

// stat is min and median of a sample.
func stat(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	slices.Sort(xs)
	return xs[0], xs[len(xs)/2]
}

func drive(ctx context.Context, c *redis.Client, calls [][]any, g, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := next.Add(1) - 1; j < int64(n); j = next.Add(1) - 1 {
				if err := c.Do(ctx, calls[j%int64(len(calls))]...).Err(); err != nil {
					fatal(err)
				}
			}
		}()
	}
	wg.Wait()
}

func memStudies() []study {
	m1, m3 := memPolicies[:1], memPolicies
	lib := current()
	return []study{
		{"L0 library, 1 policy (rl:{id}:tag)", lib, perKey(m1), false},
		{"L0 library, 3 policies", lib, perKey(m3), false},
		{"L2 remainder, 1 policy", proto("L2"), perKey(m1), false},
		{"L2 remainder, 3 policies", proto("L2"), perKey(m3), false},
		{"L3 hash rl:{id}, 1 policy, field = tag (8 B)", proto("L3"), hashKey(m1, tags), false},
		{"L3 hash rl:{id}, 3 policies, fields = tags", proto("L3"), hashKey(m3, tags), false},
		{"L3 hash rl:{id}, 3 policies, 1-byte fields", proto("L3"), hashKey(m3, []string{"a", "b", "c"}), false},
		{"L4 12-byte keys, 1 policy", lib, shortKey(m1), false},
		{"L4 12-byte keys, 3 policies", lib, shortKey(m3), false},
		{"L4+L2 12-byte keys, remainder, 1 policy", proto("L2"), shortKey(m1), false},
		{"L4+L2 12-byte keys, remainder, 3 policies", proto("L2"), shortKey(m3), false},
		{"L4+L3 11-byte hash key, 1 policy", proto("L3"), shortHash(m1), false},
		{"L4+L3 11-byte hash key, 3 policies", proto("L3"), shortHash(m3), false},
		{"L0 library, 1 policy, volatile-lru", lib, perKey(m1), true},
		{"L2 remainder, 1 policy, volatile-lru", proto("L2"), perKey(m1), true},
		{"L4+L2, 1 policy, volatile-lru", proto("L2"), shortKey(m1), true},
	}
}

// runLayoutMem measures the growth of used_memory per identity over -ids identities
// (benchtable's: ip:203.a.b.c) after one check each, from 8 connections opened beforehand.
func runLayoutMem() {
	ctx := context.Background()
	cmd, c := startServer()
	defer cmd.Process.Kill()
	ss := memStudies()
	load(ctx, c, ss)
	ids := make([]string, *memIDs)
	for i := range ids {
		ids[i] = fmt.Sprintf("ip:203.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	}
	// Opens the writers' connections before any reading (the first study paid for them).
	warm := make([][]any, 64)
	for j := range warm {
		k, a := ss[0].shape(ids[j])
		warm[j] = fcall(0, k, a)
	}
	drive(ctx, c, warm, 8, len(warm))
	res := map[int][]float64{}
	keys := map[int]float64{}
	for r := 0; r < *rounds; r++ {
		fmt.Fprintf(os.Stderr, "round %d, load %s\n", r+1, uptime())
		for i, s := range ss {
			if *only != "" && !strings.Contains(s.name, *only) {
				continue
			}
			policy, maxmem := "noeviction", "0"
			if s.lru {
				policy, maxmem = "volatile-lru", "4gb"
			}
			c.ConfigSet(ctx, "maxmemory", maxmem)
			c.ConfigSet(ctx, "maxmemory-policy", policy)
			calls := make([][]any, len(ids))
			for j, id := range ids {
				k, a := s.shape(id)
				calls[j] = fcall(i, k, a)
			}
			c.FlushAll(ctx)
			before := usedMemory(ctx, c)
			drive(ctx, c, calls, 8, len(calls))
			after := usedMemory(ctx, c)
			n, _ := c.DBSize(ctx).Result()
			res[i] = append(res[i], float64(after-before)/float64(len(ids)))
			keys[i] = float64(n) / float64(len(ids))
		}
	}
	c.ConfigSet(ctx, "maxmemory", "0")
	c.ConfigSet(ctx, "maxmemory-policy", "noeviction")
	fmt.Printf("used_memory growth per identity, %d identities, one check each; %d rounds; load %s\n", len(ids), *rounds, uptime())
	for i, s := range ss {
		xs := res[i]
		if len(xs) == 0 {
			continue
		}
		slices.Sort(xs)
		fmt.Printf("%-48s %7.1f B  (max %7.1f; keys per identity %.2f)\n", s.name, xs[0], xs[len(xs)-1], keys[i])
	}
}

func usedMemory(ctx context.Context, c *redis.Client) int64 {
	time.Sleep(time.Second) // lets the server's cron finish a rehash (as benchtable does)
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		fatal(err)
	}
	n, err := strconv.ParseInt(loadgen.InfoField(info, "used_memory"), 10, 64)
	if err != nil {
		fatal(err)
	}
	return n
}

// runVerify drives today's library and each prototype through one random sequence of checks
// (an injected clock ahead of Redis's, costs 0..12, modes 0 and 1, three identities) and
// fails on the first reply that differs.
func runVerify() {
	ctx := context.Background()
	cmd, c := startServer()
	defer cmd.Process.Kill()
	for _, n := range []int{1, 3} {
		pols := studyPolicies[:n]
		ss := []study{
			{"L0", current(), perKey(pols), false},
			{"P0", proto("P0"), perKey(pols), false},
			{"L1", proto("L1"), perKey(pols), false},
			{"L2", proto("L2"), perKey(pols), false},
			{"L3", proto("L3"), hashKey(pols, tags), false},
		}
		load(ctx, c, ss)
		c.FlushAll(ctx)
		t, err := c.Time(ctx).Result()
		if err != nil {
			fatal(err)
		}
		now := t.UnixMicro() + 5_000_000
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		costs := []int{0, 1, 1, 1, 1, 2, 3, 7, 12}
		steps, denied := 20000, 0
		for step := 0; step < steps; step++ {
			now += rng.Int64N(250_000)
			cost := costs[rng.IntN(len(costs))]
			mode := "1"
			if rng.IntN(8) == 0 {
				mode = "0"
			}
			id := fmt.Sprintf("ip:10.0.0.%d", rng.IntN(3))
			var want []int64
			for i, s := range ss {
				k, a := s.shape(id)
				for j := range k {
					k[j] = s.name + k[j] // every study its own keys
				}
				a[0], a[1], a[2] = strconv.FormatInt(now, 10), strconv.Itoa(cost), mode
				got, err := c.Do(ctx, fcall(i, k, a)...).Int64Slice()
				if err != nil {
					fatal(s.name, err)
				}
				if i == 0 {
					want = got
					if got[0] == 0 {
						denied++
					}
				} else if !slices.Equal(got, want) {
					fatal(fmt.Sprintf("FAIL %s, %d policies, step %d (now %d cost %d mode %s): %v, library %v", s.name, n, step, now, cost, mode, got, want))
				}
			}
		}
		fmt.Printf("ok: P0, L1, L2, L3 answer as the library on %d checks of %d policies (%d denied by the first)\n", steps, n, denied)
	}
}
