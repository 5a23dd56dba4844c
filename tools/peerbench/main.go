// Command peerbench runs the Redis store beside the Go rate limiters that issue 23 measured it
// against, on one redis-server, on the same identities: ulule/limiter (a fixed window: INCR
// and an expiry) and go-redis/redis_rate (GCRA in a Lua script). It is a module of its own so
// that only it requires them.
//
//	cd tools/peerbench && go run .     # through its own go.work; about a minute
//	go run . -rounds 5
//
// It starts a redis-server on a loopback port and stops it when it ends. Each round takes,
// for each subject in turn (an order that turns by one each round): the p50 latency of one
// goroutine's calls, the calls per second of 64 goroutines over 10,000 identities
// ("ip:203.x.y.z"), both at a limit no identity reaches; and once, Redis's used_memory per
// identity after one call for each of 100,000 identities at 100 per hour (no key expires
// meanwhile), on an emptied server. The table shows the medians over the rounds and each
// figure's ratio to the floor of the same run, an EVALSHA of "return 1" on the identity's key,
// unpipelined: the machine is shared and noisy, the ratios are the finding.
//
// With -out it writes its section of the results file (docs/results.md, beside benchtable's;
// loadgen.WriteSection), where docs/performance.md takes the figures of its comparison from; -note says
// what the section says of the machine's load. make bench runs it after benchtable.
//
//	go run . -out ../../docs/results.md -note "an idle VM"
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	sredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// subject is one row: how it is made for a limit per hour, under a prefix of its own.
type subject struct {
	name string
	key  string // its figures' names in the results file: "peers.<key>.p50" and so on
	make func(client *redis.Client, prefix string, perHour int64) (loadgen.Call, error)
}

var subjects = []subject{
	{"floor: EVALSHA return 1, unpipelined", "floor", func(client *redis.Client, prefix string, _ int64) (loadgen.Call, error) {
		s := redis.NewScript("return 1")
		return func(ctx context.Context, key string) error { return s.Run(ctx, client, []string{prefix + key}).Err() }, nil
	}},
	{"ratelimit, GCRA", "ours", func(client *redis.Client, prefix string, perHour int64) (loadgen.Call, error) {
		return ours(client, perHour, ratelimit.WithPrefix(prefix))
	}},
	{"ratelimit, GCRA, WithCompactState", "oursc", func(client *redis.Client, prefix string, perHour int64) (loadgen.Call, error) {
		return ours(client, perHour, ratelimit.WithPrefix(prefix), ratelimit.WithCompactState())
	}},
	{"go-redis/redis_rate v10, GCRA", "redis_rate", func(client *redis.Client, prefix string, perHour int64) (loadgen.Call, error) {
		l := redis_rate.NewLimiter(client)
		return func(ctx context.Context, key string) error {
			res, err := l.Allow(ctx, prefix+key, redis_rate.PerHour(int(perHour)))
			if err == nil && res.Allowed == 0 {
				err = fmt.Errorf("redis_rate denied %s", key)
			}
			return err
		}, nil
	}},
	{"ulule/limiter v3, fixed window", "ulule", func(client *redis.Client, prefix string, perHour int64) (loadgen.Call, error) {
		store, err := sredis.NewStoreWithOptions(client, limiter.StoreOptions{Prefix: prefix, MaxRetry: 3})
		if err != nil {
			return nil, err
		}
		l := limiter.New(store, limiter.Rate{Period: time.Hour, Limit: perHour})
		return func(ctx context.Context, key string) error {
			c, err := l.Get(ctx, key)
			if err == nil && c.Reached {
				err = fmt.Errorf("ulule denied %s", key)
			}
			return err
		}, nil
	}},
}

// ours is the Redis store's limiter under one GCRA policy, its denial cache off (every call
// asks Redis, as the others do).
func ours(client *redis.Client, perHour int64, opts ...ratelimit.RedisOption) (loadgen.Call, error) {
	opts = append(opts, ratelimit.WithDenialCache(0))
	l, err := ratelimit.New(ratelimit.NewRedisStore(client, opts...), ratelimit.Policy{Limit: perHour, Window: time.Hour})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, key string) error {
		d, err := l.Allow(ctx, key)
		if err == nil && !d.Allowed {
			err = fmt.Errorf("ratelimit denied %s", key)
		}
		return err
	}, nil
}

func main() {
	rounds := flag.Int("rounds", 3, "rounds of the latency and throughput figures; the table shows medians")
	phase := flag.Duration("d", time.Second, "length of each latency and throughput phase")
	out := flag.String("out", "", "also write this program's section of the results file here, e.g. docs/results.md")
	note := flag.String("note", "", "what the results file says of the machine's load, beside its load average")
	flag.Parse()
	if err := run(*rounds, *phase, *out, *note); err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		os.Exit(1)
	}
}

// never is a limit per hour that no identity reaches while the latency and throughput
// figures are taken.
const never = 36_000_000

func run(rounds int, phase time.Duration, out, note string) error {
	start := time.Now()
	loadStart := loadgen.LoadAverage()
	addr, stop, err := redistest.Start()
	if err != nil {
		return err
	}
	defer func() { _ = stop() }()
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64, ContextTimeoutEnabled: true})
	defer client.Close()
	keys := loadgen.Identities(10_000)

	p50s, rates := map[string][]float64{}, map[string][]float64{}
	for r := range rounds {
		fmt.Fprintf(os.Stderr, "peerbench: round %d of %d\n", r+1, rounds)
		for j := range subjects {
			s := subjects[(r+j)%len(subjects)]
			call, err := s.make(client, "pb"+strconv.Itoa(r)+":"+strconv.Itoa(j)+":", never)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			if err := loadgen.Each(ctx, call, keys, 64); err != nil { // warms up: pools, scripts, keys
				return fmt.Errorf("%s: %w", s.name, err)
			}
			samples, err := loadgen.Latencies(ctx, call, keys, phase, nil)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			n, elapsed, err := loadgen.Rate(ctx, call, keys, 64, phase)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			p50s[s.name] = append(p50s[s.name], loadgen.P50(samples))
			rates[s.name] = append(rates[s.name], float64(n)/elapsed.Seconds())
		}
	}
	bytes := map[string]float64{}
	many := loadgen.Identities(100_000)
	// Twice over, the second kept: the server's first growth to 100,000 keys after the
	// latency and throughput phases reads differently (its allocator settles).
	for _, s := range append(subjects[1:2:2], subjects[1:]...) { // the floor writes no key
		if err := client.FlushAll(ctx).Err(); err != nil {
			return err
		}
		call, err := s.make(client, "rl:", 100)
		if err != nil {
			return err
		}
		if err := loadgen.Each(ctx, call, []string{"warm-up"}, 1); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		before, err := usedMemory(ctx, client)
		if err != nil {
			return err
		}
		if err := loadgen.Each(ctx, call, many, 8); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		after, err := usedMemory(ctx, client)
		if err != nil {
			return err
		}
		bytes[s.name] = float64(after-before) / float64(len(many))
	}

	version := "?"
	if info, err := client.Info(ctx, "server").Result(); err == nil {
		version = loadgen.InfoField(info, "redis_version")
	}
	info := loadgen.Run{
		When: start,
		Machine: fmt.Sprintf("machine: %d cores, %s, redis %s, go-redis %s, redis_rate %s, ulule/limiter %s",
			runtime.NumCPU(), runtime.Version(), version, loadgen.ModuleVersion("github.com/redis/go-redis/v9"),
			loadgen.ModuleVersion("github.com/go-redis/redis_rate/v10"), loadgen.ModuleVersion("github.com/ulule/limiter/v3")),
		How: fmt.Sprintf("medians of %d rounds of %s phases; 64 goroutines over 10000 identities, used_memory over 100000; run took %s",
			rounds, phase, time.Since(start).Round(time.Second)),
		Load: fmt.Sprintf("1-minute load average %s at the start, %s at the end", loadStart, loadgen.LoadAverage()),
	}
	if note != "" {
		info.Load += "; " + note
	}
	fmt.Printf("%s; %s\n\n", info.Machine, info.How)
	floor := subjects[0].name
	fp, fr := median(p50s[floor]), median(rates[floor])
	fmt.Printf("%-38s %12s %8s %14s %8s %14s\n", "", "p50, 1 call", "ratio", "calls/s, 64", "ratio", "B/identity")
	var table strings.Builder
	table.WriteString("| figure | key | measured | floor | ratio |\n|---|---|---|---|---|\n")
	for i, s := range subjects {
		p, r := median(p50s[s.name]), median(rates[s.name])
		b := fmt.Sprintf("%12.1f B", bytes[s.name])
		if i == 0 {
			b = fmt.Sprintf("%14s", "(no key)")
		}
		fmt.Printf("%-38s %9.1f µs %7.2f× %12.1fk %7.2f× %s\n", s.name, p, p/fp, r/1000, r/fr, b)
		fmt.Fprintf(&table, "| %s: p50, one goroutine | `peers.%s.p50` | %.1f µs | %.1f µs | %.2f× |\n", s.name, s.key, p, fp, p/fp)
		fmt.Fprintf(&table, "| %s: checks per second, 64 goroutines | `peers.%s.rate` | %.1fk/s | %.1fk/s | %.2f× |\n", s.name, s.key, r/1000, fr/1000, r/fr)
		if i > 0 {
			fmt.Fprintf(&table, "| %s: `used_memory` per identity | `peers.%s.mem` | %.1f B | | |\n", s.name, s.key, bytes[s.name])
		}
	}
	if out == "" {
		return nil
	}
	table.WriteString("\n")
	return loadgen.WriteSection(out, "peers", "tools/peerbench: beside go-redis/redis_rate and ulule/limiter", info, table.String())
}

// usedMemory returns the server's used_memory once its cron has run (a hash table's rehash
// frees the old table only then).
func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	time.Sleep(time.Second) // lets the server's cron run, not a wait for an event we could see
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(loadgen.InfoField(info, "used_memory"), 10, 64)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
