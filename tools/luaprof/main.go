// Command luaprof measures the Redis time (INFO commandstats usec_per_call of FCALL) of variants
// of the check library on an idle server, from one goroutine. A throwaway profiling harness.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/redisscripts"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

type variant struct {
	name string
	src  string // library body, without the shebang; must define function `entry(KEYS, ARGV)`
	keys []string
	args []any
	loop int // iterations inside one call (microbenchmarks), 0: a plain call
}

var (
	calls  = flag.Int("n", 20000, "calls per variant per round")
	rounds = flag.Int("r", 3, "rounds")
	only   = flag.String("only", "", "run only variants whose name contains this")
	port   = flag.Int("port", 6479, "port of the private redis-server")
	oldDir = flag.String("old", "", "internal/redisscripts of another checkout, measured beside this one")
)

func main() {
	flag.Parse()
	switch {
	case *verify:
		runVerify()
		return
	case *layoutTime:
		runLayoutTime()
		return
	case *layoutMem:
		runLayoutMem()
		return
	case *benchLoop:
		runLayoutRB()
		return
	}
	cmd := exec.Command("redis-server", "--port", fmt.Sprint(*port), "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	defer cmd.Process.Kill()
	time.Sleep(300 * time.Millisecond)
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", *port)})
	ctx := context.Background()
	vs := variants()
	res := map[string][]float64{}
	for r := 0; r < *rounds; r++ {
		for i, v := range vs {
			if *only != "" && !strings.Contains(v.name, *only) {
				continue
			}
			lib := fmt.Sprintf("v%d", i)
			src := "#!lua name=" + lib + "\n" + v.src + "\nredis.register_function('" + lib + "', function(k, a) return entry(k, a) end)\n"
			if err := c.Do(ctx, "FUNCTION", "LOAD", "REPLACE", src).Err(); err != nil {
				fmt.Fprintln(os.Stderr, v.name, err)
				os.Exit(1)
			}
			c.FlushDB(ctx)
			n := *calls
			if v.loop > 0 {
				n = 5
			}
			cmdargs := append([]any{"FCALL", lib, len(v.keys)}, toAny(v.keys)...)
			cmdargs = append(cmdargs, v.args...)
			ids := make([][]any, 10000)
			for j := range ids {
				ids[j] = append([]any(nil), cmdargs...)
				if v.loop == 0 {
					for k := range v.keys {
						ids[j][3+k] = strings.Replace(v.keys[k], "203.0.7.12", fmt.Sprintf("203.0.%d.%d", j>>8, j&255), 1)
					}
				}
			}
			// warm
			warm := 200
			if v.loop > 0 {
				warm = 1
			}
			for j := 0; j < warm; j++ {
				if err := c.Do(ctx, cmdargs...).Err(); err != nil && err != redis.Nil {
					fmt.Fprintln(os.Stderr, v.name, err)
					os.Exit(1)
				}
			}
			c.ConfigResetStat(ctx)
			for j := 0; j < n; j++ {
				c.Do(ctx, ids[j%len(ids)]...)
			}
			info, _ := c.Info(ctx, "commandstats").Result()
			s := loadgen.CommandStats(info)["fcall"]
			per := float64(s.Usec) / float64(s.Calls)
			if v.loop > 0 {
				per = per * 1000 / float64(v.loop) // ns per iteration
			}
			res[v.name] = append(res[v.name], per)
		}
	}
	for _, v := range vs {
		xs := res[v.name]
		if len(xs) == 0 {
			continue
		}
		sort.Float64s(xs)
		unit := "µs/call"
		if v.loop > 0 {
			unit = "ns/iter"
		}
		fmt.Printf("%-48s min %8.2f  median %8.2f %s\n", v.name, xs[0], xs[len(xs)/2], unit)
	}
}

func fmtAll(xs []float64) string {
	var b []string
	for _, x := range xs {
		b = append(b, fmt.Sprintf("%.2f", x))
	}
	return strings.Join(b, " ")
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

const (
	gcArgs = "gc"
)

// policy args: code, limit, window µs, burst, shadow
func pol(code string, limit, window int64) []any {
	return []any{code, limit, window, 0, 0}
}

func packed(args []any) []any {
	out := append([]any(nil), args[:4]...)
	for i := 4; i+4 < len(args); i += 5 {
		out = append(out, fmt.Sprintf("%v:%v:%v:%v:%v", args[i], args[i+1], args[i+2], args[i+3], args[i+4]))
	}
	return out
}

func checkArgs(now int64, n int) ([]string, []any) {
	keys := []string{}
	args := []any{now, 1, 1, 0}
	windows := []int64{1000000, 60000000, 3600000000}
	limits := []int64{100, 100, 1000}
	if n == 3 {
		limits[0] = 10
	}
	for i := 0; i < n; i++ {
		keys = append(keys, fmt.Sprintf("rl:{ip:203.0.7.12}:gcAAAAA%d", i))
		args = append(args, pol("gc", limits[i], windows[i])...)
	}
	return keys, args
}

func libFrom(dir string) string {
	names, _ := filepath.Glob(dir + "/*.lua")
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(readAt(dir + "/preamble.lua"))
	for _, n := range names {
		base := filepath.Base(n)
		if base != "preamble.lua" && base != "check.lua" && base != "reset.lua" {
			b.WriteString(readAt(n))
		}
	}
	b.WriteString(readAt(dir + "/check.lua"))
	return b.String() + "\nlocal function entry(k, a) return check(k, a) end\n"
}

func readAt(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

func current() string {
	return redisscripts.Library() + checkLua() + "\nlocal function entry(k, a) return check(k, a) end\n"
}

// checkLua is check.lua as this checkout embeds it: Check() without the library and the call.
func checkLua() string {
	s := strings.TrimPrefix(redisscripts.Check(), "if redis.replicate_commands then redis.replicate_commands() end\n")
	s = strings.TrimPrefix(s, redisscripts.Library())
	return strings.TrimSuffix(s, "return check(KEYS, ARGV)\n")
}
