package redisscripts_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	_ "github.com/a7d3e0dd/ratelimit/algorithms" // registers every algorithm with package algo
	"github.com/a7d3e0dd/ratelimit/internal/algo"
	"github.com/a7d3e0dd/ratelimit/internal/redisscripts"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// codes returns the code of every registered algorithm, and of the models that count
// calendar periods for them (algo.CalendarOf).
func codes(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range algo.All() {
		out = append(out, m.Code())
		if c := algo.CalendarOf(m); c != nil {
			out = append(out, c.Code())
		}
	}
	if len(out) < 7 {
		t.Fatalf("only %d algorithms registered (%v): is package algorithms imported?", len(out), out)
	}
	return out
}

// typesTail is a Lua tail for Library(): the types of algorithms[code] and refunds[code].
const typesTail = "\nreturn {type(algorithms[ARGV[1]]), type(refunds[ARGV[1]])}\n"

// TestEveryAlgorithmHasLua: every registered algorithm has its Lua check and refund.
func TestEveryAlgorithmHasLua(t *testing.T) {
	c := redistest.Standalone(t)
	ctx := ctxT(t)
	src := redisscripts.Library() + typesTail
	for _, code := range codes(t) {
		got, err := c.Eval(ctx, src, nil, code).Result()
		if err != nil {
			t.Fatalf("%s: EVAL of the library: %v", code, err)
		}
		if want := []any{"function", "function"}; !reflect.DeepEqual(got, want) {
			t.Errorf("algorithm %q: {type(algorithms.%s), type(refunds.%s)} = %v; want %v", code, code, code, got, want)
		}
	}
	// The probe itself tells a missing function.
	got, err := c.Eval(ctx, src, nil, "no-such-code").Result()
	if err != nil || !reflect.DeepEqual(got, []any{"nil", "nil"}) {
		t.Errorf("an unknown code: %v, %v; want {nil, nil}", got, err)
	}
}

// TestLuaHasNoOtherAlgorithms: the Lua tables hold the registered codes and nothing else.
func TestLuaHasNoOtherAlgorithms(t *testing.T) {
	c := redistest.Standalone(t)
	const tail = `
local function keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return table.concat(out, ',')
end
return {keys(algorithms), keys(refunds)}
`
	got, err := c.Eval(ctxT(t), redisscripts.Library()+tail, nil).StringSlice()
	if err != nil {
		t.Fatalf("EVAL of the library: %v", err)
	}
	want := codes(t)
	slices.Sort(want)
	for i, table := range []string{"algorithms", "refunds"} {
		if got[i] != strings.Join(want, ",") {
			t.Errorf("Lua table %s holds %q; want the registered codes %q", table, got[i], strings.Join(want, ","))
		}
	}
}

// TestScriptsLoad: the assembled scripts compile in Redis.
func TestScriptsLoad(t *testing.T) {
	c := redistest.Standalone(t)
	ctx := ctxT(t)
	for name, src := range map[string]string{"Check": redisscripts.Check(), "Reset": redisscripts.Reset(), "Library": redisscripts.Library()} {
		sha, err := c.ScriptLoad(ctx, src).Result()
		if err != nil {
			t.Errorf("SCRIPT LOAD of %s(): %v", name, err)
			continue
		}
		sum := sha1.Sum([]byte(src))
		if sha != hex.EncodeToString(sum[:]) {
			t.Errorf("SCRIPT LOAD of %s() = %s; want the SHA1 of the source %x", name, sha, sum)
		}
	}
	if !strings.Contains(redisscripts.Check(), redisscripts.Library()) {
		t.Errorf("Check() does not hold Library()")
	}
}

// checkArgs returns the ARGV of check.lua for one enforced policy.
func checkArgs(clockUS int64, cost int64, mode string, at int64, code string, limit, window, burst int64) []any {
	return []any{clockUS, cost, mode, at, policyArg(code, limit, window, burst)}
}

// policyArg returns the ARGV string of one enforced policy.
func policyArg(code string, limit, window, burst int64) string {
	return fmt.Sprintf("%s:%d:%d:%d:0", code, limit, window, burst)
}

const now = int64(1_700_000_000_000_000)

// burstOf is the burst of code's policy in these tests: 0, but for a calendar period, whose
// string holds its start in the burst's place: a start that makes a period of 1 s hold now.
func burstOf(code string) int64 {
	if code == "cw" {
		return now - 500_000
	}
	return 0
}

// TestEveryAlgorithmRunsThroughCheck: check.lua dispatches every code: a charge is admitted
// and counted, and a refund of it (mode 2) answers an empty reply and gives it back.
func TestEveryAlgorithmRunsThroughCheck(t *testing.T) {
	c := redistest.Standalone(t)
	ctx := ctxT(t)
	script := redis.NewScript(redisscripts.Check())
	for _, code := range codes(t) {
		key := redistest.Prefix(t) + code
		burst := burstOf(code)
		got, err := script.Run(ctx, c, []string{key}, checkArgs(now, 3, "1", 0, code, 10, 1_000_000, burst)...).Int64Slice()
		if err != nil {
			t.Fatalf("%s: check: %v", code, err)
		}
		if want := []int64{1, 7}; len(got) != 7 || got[0] != want[0] || got[1] != want[1] || got[6] != now {
			t.Errorf("%s: a charge of 3 of 10: %v; want allowed, 7 remaining, the time %d last", code, got, now)
		}
		reply, err := script.Run(ctx, c, []string{key}, checkArgs(now, 3, "2", now, code, 10, 1_000_000, burst)...).Slice()
		if err != nil || len(reply) != 0 {
			t.Errorf("%s: refund: %v, %v; want an empty reply", code, reply, err)
		}
		got, err = script.Run(ctx, c, []string{key}, checkArgs(now, 0, "0", 0, code, 10, 1_000_000, burst)...).Int64Slice()
		if err != nil {
			t.Fatalf("%s: read: %v", code, err)
		}
		if got[0] != 1 || got[1] != 10 {
			t.Errorf("%s: after the refund: %v; want allowed, 10 remaining", code, got)
		}
	}
}

// TestUnknownCode: check.lua answers an error naming a code it does not know, in a check and
// in a refund, and writes nothing.
func TestUnknownCode(t *testing.T) {
	c := redistest.Standalone(t)
	ctx := ctxT(t)
	src := redisscripts.Check()
	for _, mode := range []string{"0", "1", "2", "3"} {
		key := redistest.Prefix(t) + "k"
		_, err := c.Eval(ctx, src, []string{key}, checkArgs(now, 1, mode, now, "zq", 10, 1_000_000, 0)...).Result()
		if err == nil {
			t.Errorf("mode %s: an unknown code gave no error", mode)
			continue
		}
		if !strings.Contains(err.Error(), "unknown algorithm code zq") {
			t.Errorf("mode %s: error %q does not name the unknown code zq", mode, err)
		}
		if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Errorf("mode %s: the key exists (%d, %v) after an unknown code", mode, n, err)
		}
	}
	// A known code in front of the unknown one: the error still comes, and nothing is charged.
	key1, key2 := redistest.Prefix(t)+"{a}1", redistest.Prefix(t)+"{a}2"
	args := append(checkArgs(now, 1, "1", 0, "gc", 10, 1_000_000, 0), policyArg("zq", 10, 1_000_000, 0))
	_, err := c.Eval(ctx, src, []string{key1, key2}, args...).Result()
	if err == nil || !strings.Contains(err.Error(), "unknown algorithm code zq") {
		t.Errorf("second policy unknown: %v; want an error naming zq", err)
	}
	if n, err := c.Exists(ctx, key1, key2).Result(); err != nil || n != 0 {
		t.Errorf("second policy unknown: %d keys written (%v); want none", n, err)
	}
}

// TestFunctionMatchesScript: the Redis Functions library loads, and its function answers a
// sequence of calls as the script does, on keys of its own.
func TestFunctionMatchesScript(t *testing.T) {
	c := redistest.Standalone(t)
	ctx := ctxT(t)
	src, name := redisscripts.Function()
	if err := c.FunctionLoadReplace(ctx, src).Err(); err != nil {
		t.Fatalf("FUNCTION LOAD: %v", err)
	}
	if !strings.HasPrefix(name, "ratelimit_check_") || !strings.Contains(src, "name=ratelimit_"+strings.TrimPrefix(name, "ratelimit_check_")) {
		t.Errorf("function %q of library %q: want both named by the code's digest", name, strings.SplitN(src, "\n", 2)[0])
	}
	script := redis.NewScript(redisscripts.Check())
	for _, code := range codes(t) {
		prefix := redistest.Prefix(t) + code
		for i, call := range []struct {
			cost int64
			mode string
			at   int64
		}{{3, "1", 0}, {5, "1", 0}, {4, "1", 0}, {0, "0", 0}, {3, "2", now}, {2, "0", 0}} {
			args := checkArgs(now+int64(i), call.cost, call.mode, call.at, code, 10, 1_000_000, burstOf(code))
			want, err := script.Run(ctx, c, []string{prefix + ":script"}, args...).Slice()
			if err != nil {
				t.Fatalf("%s call %d: script: %v", code, i, err)
			}
			got, err := c.FCall(ctx, name, []string{prefix + ":function"}, args...).Slice()
			if err != nil {
				t.Fatalf("%s call %d: function: %v", code, i, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s call %d: the function answered %v; the script %v", code, i, got, want)
			}
		}
	}
}
