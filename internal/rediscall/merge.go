package rediscall

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A pipeline saves round trips, not the server's work per call: each call is still a command
// to read, a function to enter, a clock to read and a reply to write, which cost a short check
// about as much as its own reads and writes. So where one server holds every key (not a
// Cluster or a Ring, whose calls in one batch name keys of many slots), the batcher merges
// the calls of a function that has a merged form (Script.WithMerged) into one call of that
// form, which runs them one after the other, each as it would run alone, and answers each its
// own reply or its own error. Each call stays atomic, and so does the merged call: its calls
// happen at one instant of the server, in the order they were queued.
//
// The merged form is called as
//
//	FCALL many <keys of every call> m <per call: its number of keys, its number of arguments, its arguments>
//
// and answers one array of integers: per call, its length n and its n integers; or, for a
// call that failed, -n and n integers that hold its error message (its length in bytes, then
// six bytes to an integer). A merged call that fails as a whole (the connection, the
// deadline, the function missing) fails each of its calls with that error, as a pipeline
// would. One that the server refuses to run merged, having run nothing — keys of several
// slots on a server in cluster mode behind one address (CROSSSLOT), an ACL that allows the
// function but not its merged form (NOPERM) — makes its batcher stop merging: its calls are
// sent again unmerged, as a pipeline. An ACL that refuses one of its keys (NOPERM too) has
// its calls sent again unmerged, each answered alone, and the batcher merging still.

// maxMerged is the most calls merged into one: the server runs a merged call without serving
// anyone else meanwhile, so a long queue leaves as several (32 checks hold it about 0.1 ms).
const maxMerged = 32

// mergedForms maps a function with a merged form to that form's name (see Script.WithMerged).
var mergedForms sync.Map // string -> any (a string)

// merged is a call that runs calls merged.
type merged struct {
	cmd   onceInts
	calls []mergeInts
}

// merge replaces the calls of cmds that may be merged by merged calls, of at most maxMerged
// calls of one function each, and returns the commands to send, with the merged calls among
// them. A call with nothing to merge with goes as it is.
func merge(ctx context.Context, cmds []redis.Cmder) ([]redis.Cmder, []*merged) {
	out := make([]redis.Cmder, 0, len(cmds))
	var groups []*merged // in the order they were started
	for _, cmd := range cmds {
		c, ok := cmd.(mergeInts)
		if !ok {
			out = append(out, cmd)
			continue
		}
		var g *merged
		for _, m := range groups {
			if m.calls[0].Args()[1] == c.Args()[1] && len(m.calls) < maxMerged {
				g = m
				break
			}
		}
		if g == nil {
			g = &merged{}
			groups = append(groups, g)
		}
		g.calls = append(g.calls, c)
	}
	var done []*merged
	for _, g := range groups {
		many, ok := mergedForms.Load(g.calls[0].Args()[1])
		if len(g.calls) == 1 || !ok {
			for _, c := range g.calls {
				out = append(out, c)
			}
			continue
		}
		g.cmd = mergedCmd(ctx, many, g.calls)
		out = append(out, g.cmd)
		done = append(done, g)
	}
	return out, done
}

// mergedCmd returns the call of many that runs calls.
func mergedCmd(ctx context.Context, many any, calls []mergeInts) onceInts {
	nkeys, nargs := 0, 1
	for _, c := range calls {
		a := c.Args()
		nk := a[2].(int)
		nkeys += nk
		nargs += 2 + len(a) - Head - nk
	}
	args := make([]any, Head, Head+nkeys+nargs)
	args[0], args[1], args[2] = fcallArg, many, nkeys
	for _, c := range calls {
		a := c.Args()
		args = append(args, a[Head:Head+a[2].(int)]...)
	}
	args = append(args, len(calls))
	for _, c := range calls {
		a := c.Args()
		nk := a[2].(int)
		args = append(args, nk, len(a)-Head-nk)
		args = append(args, a[Head+nk:]...)
	}
	cmd := redis.NewIntSliceCmd(ctx, args...)
	if nkeys > 0 {
		cmd.SetFirstKeyPos(Head)
	}
	return onceInts{cmd}
}

// refusedMerged reports whether the server refused to run a merged call, having run nothing,
// where it runs its calls one by one (see above).
func refusedMerged(err error) bool {
	return err != nil && (redis.HasErrorPrefix(err, "CROSSSLOT") || redis.HasErrorPrefix(err, "NOPERM"))
}

// answer gives each call of m its reply or its error. A reply that does not read as the
// merged form's fails every call.
func (m *merged) answer() {
	reply, err := m.cmd.Result()
	if err == nil {
		err = m.split(reply)
	}
	if err != nil {
		for _, c := range m.calls {
			c.SetErr(err)
		}
	}
}

// split reads reply, the merged form's, into its calls, or returns why it cannot: then it gave
// none of them anything.
func (m *merged) split(reply []int64) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("redis: can't parse the reply of %d merged calls: "+format, append([]any{len(m.calls)}, args...)...)
	}
	// The bounds first: every call's part within the reply, and nothing after the last.
	i := 0
	for j := range m.calls {
		if i >= len(reply) {
			return bad("%d integers, none for call %d", len(reply), j+1)
		}
		n := reply[i]
		if n < 0 {
			n = -n // an error's length; -MinInt64 is MinInt64 still, refused below
		}
		if n < 0 || n > int64(len(reply)-i-1) {
			return bad("call %d has %d integers at %d of %d", j+1, n, i, len(reply))
		}
		i += 1 + int(n)
	}
	if i != len(reply) {
		return bad("%d integers, %d read", len(reply), i)
	}
	i = 0
	for _, c := range m.calls {
		n := reply[i]
		if n >= 0 {
			c.SetVal(reply[i+1 : i+1+int(n) : i+1+int(n)])
			i += 1 + int(n)
			continue
		}
		c.SetErr(callError(reply[i+1 : i+1-int(n)]))
		i += 1 - int(n)
	}
	return nil
}

// callError is the error of a call that failed in a merged call: its message, in the integers
// of the merged form (its length in bytes, then six bytes to an integer, the first highest).
func callError(ints []int64) error {
	if len(ints) == 0 || ints[0] < 0 || (ints[0]+5)/6 != int64(len(ints)-1) {
		return scriptError("ERR ratelimit: a merged call failed, and its error could not be read")
	}
	msg := make([]byte, 0, 4+6*(len(ints)-1))
	var b [8]byte
	for _, v := range ints[1:] {
		binary.BigEndian.PutUint64(b[:], uint64(v))
		msg = append(msg, b[2:]...)
	}
	msg = msg[:ints[0]]
	if !hasCode(msg) { // as the server writes an error without one
		msg = append([]byte("ERR "), msg...)
	}
	return scriptError(msg)
}

// hasCode reports whether an error message starts with an error code: a word of capitals
// (WRONGTYPE, NOPERM, ERR).
func hasCode(msg []byte) bool {
	i := 0
	for i < len(msg) && msg[i] >= 'A' && msg[i] <= 'Z' {
		i++
	}
	return i > 0 && i < len(msg) && msg[i] == ' '
}

// scriptError is an error reply of the server, as go-redis reports one (a redis.Error).
type scriptError string

func (e scriptError) Error() string { return string(e) }

// RedisError marks e as an error reply of the server.
func (scriptError) RedisError() {}
