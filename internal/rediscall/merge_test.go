package rediscall

import (
	"context"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/redisscripts"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// checkScript is the store's check, merged where it can be.
var checkScript = NewScript(redisscripts.Check()).WithFunction(redisscripts.Function()).WithMerged(redisscripts.Merged())

// checkArgs returns the arguments of a check of key under a GCRA policy of 2 per 1,000 s
// (see check.lua), at now ("0": the server's TIME), charging cost; policy replaces the policy.
func checkArgs(key, now, policy string) []any {
	if policy == "" {
		policy = "gc:2:1000000000:0:0"
	}
	return []any{nil, nil, 1, &key, now, 1, 1, 0, policy}
}

// mergedBatch sends the calls of args as one batch of a merging batcher, as a queue of
// concurrent calls leaves, and returns their replies and errors, in order.
func mergedBatch(t *testing.T, client *redis.Client, args ...[]any) ([][]int64, []error) {
	t.Helper()
	ctx := context.Background()
	b := newBatcher(client, true)
	batch := make([]*queued, len(args))
	for i, a := range args {
		batch[i] = &queued{ctx: ctx, cmd: checkScript.cmd(ctx, fcallArg, checkScript.fnArg, a, true), done: make(chan struct{})}
	}
	b.sendBatch(batch)
	replies, errs := make([][]int64, len(args)), make([]error, len(args))
	for i, q := range batch {
		replies[i], errs[i] = q.cmd.(intsCmd).Val(), q.cmd.Err()
	}
	return replies, errs
}

// fcalls returns how many FCALLs the server ran since its statistics were reset.
func fcalls(t *testing.T, client *redis.Client) int64 {
	t.Helper()
	info, err := client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	return loadgen.CommandStats(info)["fcall"].Calls
}

// The calls of a batch leave as one call of the merged form, and each is answered as it would
// be alone: three checks of one key in their order (admitted, admitted, denied), all at the one
// instant of the server's TIME; a check on an injected clock at its own time; and the calls
// that fail (a key holding no state of ours, a policy the library does not know) with their
// own errors, while the others are answered.
func TestMergedCallsAnswerEachAsAlone(t *testing.T) {
	client := redistest.Standalone(t)
	ctx := context.Background()
	p := redistest.Prefix(t)
	if _, err := NewCaller(client).RunInts(ctx, checkScript, checkArgs(p+"{warm}", "0", "")); err != nil { // loads the library
		t.Fatal(err)
	}
	if err := client.Set(ctx, p+"{bad}", "not a TAT", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	replies, errs := mergedBatch(t, client,
		checkArgs(p+"{a}", "0", ""),
		checkArgs(p+"{a}", "0", ""),
		checkArgs(p+"{bad}", "0", ""),
		checkArgs(p+"{a}", "0", ""),
		checkArgs(p+"{b}", "1700000000000000", ""),
		checkArgs(p+"{c}", "0", "zz:1:1:0:0"),
	)
	if got := fcalls(t, client); got != 1 {
		t.Errorf("%d FCALLs; want 1, merged", got)
	}
	for i, want := range []struct {
		allowed, remaining int64
		err                string
	}{{1, 1, ""}, {1, 0, ""}, {0, 0, "malformed state"}, {0, 0, ""}, {1, 1, ""}, {0, 0, "unknown algorithm code zz"}} {
		r, err := replies[i], errs[i]
		switch {
		case want.err != "":
			if err == nil || !strings.Contains(err.Error(), want.err) {
				t.Errorf("call %d: %v, %v; want the error %q", i+1, r, err, want.err)
			}
		case err != nil || len(r) != 7 || r[0] != want.allowed || r[1] != want.remaining:
			t.Errorf("call %d: %v, %v; want allowed %d, remaining %d", i+1, r, err, want.allowed, want.remaining)
		}
	}
	if errs[0] == nil && errs[3] == nil && (replies[0][6] != replies[1][6] || replies[1][6] != replies[3][6]) {
		t.Errorf("the checks on the server's clock ran at %d, %d and %d µs; want one instant", replies[0][6], replies[1][6], replies[3][6])
	}
	if errs[4] == nil && replies[4][6] != 1700000000000000 {
		t.Errorf("the check on an injected clock ran at %d µs; want its own time", replies[4][6])
	}
}

// A merged call that fails whole fails each of its calls with its error; a caller whose call
// found the library gone loads it again and is answered, merged or not.
func TestMergedCallFailsWhole(t *testing.T) {
	client := redistest.Standalone(t)
	ctx := context.Background()
	p := redistest.Prefix(t)
	caller := NewCaller(client)
	if _, err := caller.RunInts(ctx, checkScript, checkArgs(p+"{warm}", "0", "")); err != nil {
		t.Fatal(err)
	}
	if err := client.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	_, errs := mergedBatch(t, client, checkArgs(p+"{a}", "0", ""), checkArgs(p+"{b}", "0", ""))
	for i, err := range errs {
		if !isFunctionMissing(err) {
			t.Errorf("call %d: %v; want the function missing", i+1, err)
		}
	}
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := p + "{" + string(rune('a'+i%26)) + "}"
			if _, err := caller.RunInts(ctx, checkScript, checkArgs(key, "0", "gc:1000:1000000:0:0")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// A call that fails after it wrote part of its state (an ACL that refuses the sliding log's
// ZADD, after the GCRA policy of the same list was written) is answered its error and not sent
// again: merged, it is charged once, as alone.
func TestMergedCallFailingAfterAWriteIsNotSentAgain(t *testing.T) {
	admin := redistest.Standalone(t)
	ctx := context.Background()
	p := redistest.Prefix(t)
	if _, err := NewCaller(admin).RunInts(ctx, checkScript, checkArgs(p+"{warm}", "0", "")); err != nil {
		t.Fatal(err)
	}
	user := strings.NewReplacer(":", "-", "/", "-").Replace(p) + "nozadd"
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "reset", "on", ">pw", "~*", "&*", "+@all", "-zadd").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
	client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), Username: user, Password: "pw"})
	t.Cleanup(func() { client.Close() })
	two := func(id string) []any {
		gc, sl := p+"{"+id+"}:gc", p+"{"+id+"}:sl"
		return []any{nil, nil, 2, &gc, &sl, "0", 1, 1, 0, "gc:10:1000000000:0:0", "sl:10:1000000000:0:0"}
	}
	// How far ahead of the server's time the GCRA policy's TAT is, in whole intervals of 100 s.
	ahead := func(id string) int64 {
		v, _ := admin.Get(ctx, p+"{"+id+"}:gc").Int64()
		now, _ := admin.Time(ctx).Result()
		return (v - now.UnixMicro() + 50_000_000) / 100_000_000
	}
	if _, err := NewCaller(client).RunInts(ctx, checkScript, two("alone")); err == nil || !strings.Contains(err.Error(), "can't run this command") {
		t.Fatalf("alone: %v; want the ACL's refusal of ZADD", err)
	}
	_, errs := mergedBatch(t, client, two("merged"), checkArgs(p+"{other}", "0", ""))
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "can't run this command") || errs[1] != nil {
		t.Errorf("merged: %v, %v; want the ACL's refusal of ZADD, then an answer", errs[0], errs[1])
	}
	if a, m := ahead("alone"), ahead("merged"); a != 1 || m != 1 {
		t.Errorf("the GCRA policy charged %d times alone, %d merged; want once each", a, m)
	}
}

// A server that refuses a merged call having run nothing makes its batcher stop merging, and
// the calls are answered unmerged: a server in cluster mode behind one address (keys of
// several slots in one call: CROSSSLOT), and an ACL that allows the check's function but not
// its merged form (NOPERM), which must not turn the caller to scripts either.
func TestMergedCallRefused(t *testing.T) {
	t.Run("CROSSSLOT", func(t *testing.T) {
		client := redis.NewClient(&redis.Options{Addr: redistest.OneShardCluster(t)})
		t.Cleanup(func() { client.Close() })
		refusedThenAnswered(t, client, NewCaller(client))
	})
	t.Run("NOPERM", func(t *testing.T) {
		admin := redistest.Standalone(t)
		ctx := context.Background()
		if _, err := NewCaller(admin).RunInts(ctx, checkScript, checkArgs("{warm}", "0", "")); err != nil {
			t.Fatal(err)
		}
		user := strings.NewReplacer(":", "-", "/", "-").Replace(redistest.Prefix(t)) + "onefn"
		if err := admin.Do(ctx, "ACL", "SETUSER", user, "reset", "on", ">pw", "~*", "&*", "+@all", "-fcall", "-evalsha", "-eval", "+fcall|"+checkScript.fn).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
		client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), Username: user, Password: "pw"})
		t.Cleanup(func() { client.Close() })
		caller := NewCaller(client)
		refusedThenAnswered(t, client, caller)
		if caller.scriptsOnly.Load() {
			t.Error("the caller turned to scripts")
		}
	})
}

// refusedThenAnswered sends a batch that the server refuses merged, then 64 concurrent calls
// through caller, and fails unless every call is answered.
func refusedThenAnswered(t *testing.T, client *redis.Client, caller *Caller) {
	t.Helper()
	ctx := context.Background()
	if _, err := caller.RunInts(ctx, checkScript, checkArgs("{warm}", "0", "")); err != nil { // loads the library
		t.Fatal(err)
	}
	b := newBatcher(client, true)
	batch := []*queued{
		{ctx: ctx, cmd: checkScript.cmd(ctx, fcallArg, checkScript.fnArg, checkArgs("{a}", "0", "gc:1000:1000000:0:0"), true), done: make(chan struct{})},
		{ctx: ctx, cmd: checkScript.cmd(ctx, fcallArg, checkScript.fnArg, checkArgs("{b}", "0", "gc:1000:1000000:0:0"), true), done: make(chan struct{})},
	}
	b.sendBatch(batch)
	for i, q := range batch {
		if err := q.cmd.Err(); err != nil {
			t.Errorf("call %d, refused merged: %v; want it answered unmerged", i+1, err)
		}
	}
	if b.merges.Load() {
		t.Error("the batcher merges still")
	}
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := caller.RunInts(ctx, checkScript, checkArgs("{"+strconv.Itoa(i)+"}", "0", "gc:1000:1000000:0:0")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// An ACL that refuses a call one of its keys (a pattern of keys the store's keys do not all
// match: compact keys, which do not start with the prefix) refuses that call, not Functions,
// nor merged calls: the caller does not turn to scripts for good (it did, telling its store's
// log that Redis refused FCALL and the observer that the store ran without Functions), and a
// batch holding such a call is answered unmerged, the batcher merging still.
func TestKeyRefusedByAnACL(t *testing.T) {
	admin := redistest.Standalone(t)
	ctx := context.Background()
	p := redistest.Prefix(t)
	if _, err := NewCaller(admin).RunInts(ctx, checkScript, checkArgs(p+"{warm}", "0", "")); err != nil { // loads the library
		t.Fatal(err)
	}
	user := strings.NewReplacer(":", "-", "/", "-").Replace(p) + "somekeys"
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "reset", "on", ">pw", "~"+p+"*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
	client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), Username: user, Password: "pw"})
	t.Cleanup(func() { client.Close() })
	caller := NewCaller(client)
	told := false
	caller.OnFunctionsRefused(func(error) { told = true })
	if _, err := caller.RunInts(ctx, checkScript, checkArgs("elsewhere{x}", "0", "")); err == nil || !redis.HasErrorPrefix(err, "NOPERM") {
		t.Fatalf("a call of a key the ACL refuses: %v; want NOPERM", err)
	}
	if caller.scriptsOnly.Load() || told {
		t.Error("a key refused by an ACL turned the caller to scripts")
	}
	b := newBatcher(client, true)
	batch := []*queued{
		{ctx: ctx, cmd: checkScript.cmd(ctx, fcallArg, checkScript.fnArg, checkArgs(p+"{a}", "0", ""), true), done: make(chan struct{})},
		{ctx: ctx, cmd: checkScript.cmd(ctx, fcallArg, checkScript.fnArg, checkArgs("elsewhere{y}", "0", ""), true), done: make(chan struct{})},
	}
	b.sendBatch(batch)
	if err0, err1 := batch[0].cmd.Err(), batch[1].cmd.Err(); err0 != nil || err1 == nil || !redis.HasErrorPrefix(err1, "NOPERM") {
		t.Errorf("merged: %v, %v; want an answer, then the ACL's refusal of the key", err0, err1)
	}
	if !b.merges.Load() {
		t.Error("a key refused by an ACL stopped the batcher merging")
	}
}

// A merged reply whose length is the least int64 (whose negation is itself) is refused as
// malformed: it passed the bounds check and panicked the batcher's goroutine, and with it the
// process.
func TestSplitRefusesTheLeastLength(t *testing.T) {
	ctx := context.Background()
	m := &merged{calls: []mergeInts{
		{redis.NewIntSliceCmd(ctx, "fcall", "f", 0)},
		{redis.NewIntSliceCmd(ctx, "fcall", "f", 0)},
	}}
	if err := m.split([]int64{math.MinInt64, 0, 0}); err == nil {
		t.Fatal("split accepted a reply of length -2^63")
	}
}
