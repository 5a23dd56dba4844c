package rediscall

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// A pipeline saves round trips, not the server's work per call: each call is still a command
// to read, a function to enter, a clock to read and a reply to write, which cost a short check
// about as much as its own reads and writes. So where one server holds every key (not a
// Cluster or a Ring, whose calls in one batch name keys of many slots), the batcher merges
// the calls of a function that has a merged form (Script.WithMerged) into one call of that
// form, which runs them one after the other, each as it would run alone, and answers each its
// own reply. Each call stays atomic, and so does the merged call: its calls happen at one
// instant of the server, in the order they were queued.
//
// The merged form is called as
//
//	FCALL many <keys of every call> m <per call: its number of keys, its number of arguments, its arguments>
//
// and answers one array of integers: per call, its length n and its n integers; or -1 alone
// for a call that failed, which the form guarantees wrote nothing: the batcher then sends it
// again alone, the same call, for its error. A merged call that fails as a whole (the
// connection, the deadline, the function missing) fails each of its calls with that error, as
// a pipeline would.

// maxMerged is the most calls merged into one: the server runs a merged call without serving
// anyone else meanwhile, so a long queue leaves as several (32 checks hold it about 0.1 ms).
const maxMerged = 32

// merged is a call that runs calls merged.
type merged struct {
	cmd   onceInts
	calls []onceInts
}

// merge replaces the calls of cmds that have a merged form by merged calls, of at most
// maxMerged calls of one form each, and returns the commands to send, with the merged calls
// among them. A call with nothing to merge with goes as it is.
func merge(ctx context.Context, cmds []redis.Cmder) ([]redis.Cmder, []*merged) {
	out := make([]redis.Cmder, 0, len(cmds))
	var groups []*merged // the merged calls, in the order they were started
	for _, cmd := range cmds {
		c, ok := cmd.(onceInts)
		if !ok || c.many == nil {
			out = append(out, cmd)
			continue
		}
		var g *merged
		for _, m := range groups {
			if m.calls[0].many == c.many && len(m.calls) < maxMerged {
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
		if len(g.calls) == 1 {
			out = append(out, g.calls[0])
			continue
		}
		g.cmd = mergedCmd(ctx, g.calls)
		out = append(out, g.cmd)
		done = append(done, g)
	}
	return out, done
}

// mergedCmd returns the merged call of calls, which share their merged form.
func mergedCmd(ctx context.Context, calls []onceInts) onceInts {
	nkeys, nargs := 0, 1
	for _, c := range calls {
		a := c.Args()
		nk := a[2].(int)
		nkeys += nk
		nargs += 2 + len(a) - Head - nk
	}
	args := make([]any, Head, Head+nkeys+nargs)
	args[0], args[1], args[2] = fcallArg, calls[0].many, nkeys
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
	return onceInts{IntSliceCmd: cmd}
}

// answer gives each call of m its reply, or the merged call's error, and returns the calls
// that failed alone: they ran nothing, and go again alone.
func (m *merged) answer() (alone []onceInts) {
	reply, err := m.cmd.Result()
	i := 0
	for j, c := range m.calls {
		switch {
		case err != nil:
			c.SetErr(err)
		case i >= len(reply):
			c.SetErr(fmt.Errorf("redis: can't parse the reply of %d merged calls: %d integers, none for call %d", len(m.calls), len(reply), j+1))
		case reply[i] == -1:
			alone = append(alone, c)
			i++
		case reply[i] < 0 || i+1+int(reply[i]) > len(reply):
			c.SetErr(fmt.Errorf("redis: can't parse the reply of %d merged calls: call %d of length %d at %d of %d", len(m.calls), j+1, reply[i], i, len(reply)))
			err = c.Err() // what follows cannot be read either
		default:
			n := int(reply[i])
			c.SetVal(reply[i+1 : i+1+n : i+1+n])
			i += 1 + n
		}
	}
	return alone
}
