// Package rediscall sends a store's calls to Redis: each call exactly once, whatever the
// client's retry settings, as a Redis Function where the server has them and a script where
// not, loading either again when the server lost it; and, over a connection pool, batched per
// node so that concurrent calls share round trips.
package rediscall

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A check that charges is not idempotent, and go-redis retries a command whose reply did not
// come in time (up to MaxRetries, 3 by default): a request would be charged once per attempt
// the server ran. So the store sends each call once, whatever the client's retry settings, and
// leaves what to do about a failure to the Caller — the fail mode, the fallback. A call that
// failed may still have run: then its request was charged once, never more.

// Script is Lua code that a store runs once per call: as a Redis Function (FCALL) where the
// server has Functions and the library defines one, else as a script by its SHA1 digest
// (EVALSHA), and by its source when the server does not have it.
//
// Either way the server may have lost the code (FUNCTION FLUSH, SCRIPT FLUSH, a restart
// without persistence, a failover to a node that never had it): it then answers that it does
// not know it without running anything, so loading the code and sending the call again is the
// same call, not a retry, and callers never see the loss.
type Script struct {
	src, sha string
	// srcArg, shaArg and fnArg are src, sha and fn as command arguments, so that a call does
	// not copy them to the heap.
	srcArg, shaArg, fnArg any
	// lib is the Redis Functions library that registers the function fn; "" runs the script
	// as a script.
	lib, fn string
	// merged is set when the calls of s may be merged (see merge.go): WithMerged.
	merged bool
}

// NewScript returns the script of src.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	return &Script{src: src, sha: sha, srcArg: src, shaArg: sha}
}

// Function returns the name of the function s runs as, or "" for a script.
func (s *Script) Function() string { return s.fn }

// WithFunction returns s, run as the function fn of the library lib where the server can.
func (s *Script) WithFunction(lib, fn string) *Script {
	s.lib, s.fn, s.fnArg = lib, fn, fn
	return s
}

// WithMerged returns a copy of s whose concurrent calls as its function may be merged into
// one call of the function many of the same library (see merge.go); s itself is not merged.
func (s *Script) WithMerged(many string) *Script {
	mergedForms.Store(s.fn, any(many))
	c := *s
	c.merged = true
	return &c
}

// processor runs one command: every go-redis client (*redis.Client, the failover client,
// *redis.ClusterClient, *redis.Ring) is one.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// onceCmd is a command go-redis sends once: it never retries a command whose NoRetry says so
// (it routes a Cluster command after MOVED or ASK all the same, which is not a retry: the node
// that answered so did not run it).
type onceCmd struct{ *redis.Cmd }

// NoRetry tells go-redis not to send the command again.
func (onceCmd) NoRetry() bool { return true }

// onceInts is an onceCmd whose reply is an array of integers; mergeInts, one that may be
// merged with others (see merge.go). Each is one pointer, which an interface holds without an
// allocation.
type (
	onceInts  struct{ *redis.IntSliceCmd }
	mergeInts struct{ *redis.IntSliceCmd }
)

// NoRetry tells go-redis not to send the command again.
func (onceInts) NoRetry() bool { return true }

// NoRetry tells go-redis not to send the command again.
func (mergeInts) NoRetry() bool { return true }

// intsCmd is onceInts and mergeInts.
type intsCmd interface {
	redis.Cmder
	Val() []int64
}

// maxLoads is how many times a call loads the library before it gives up.
const maxLoads = 3

// Head is the number of arguments of a call before its keys: the command, the function or
// script, the number of keys.
const Head = 3

// NewCaller returns the caller of client: over a pipelining go-redis client, its calls go
// through a batcher per node.
func NewCaller(client redis.Scripter) *Caller {
	c := &Caller{client: client}
	if p, ok := client.(pipeliner); ok {
		c.send = c.sender(p)
	}
	return c
}

// OnMergeRefused has f told, once, when the server refuses a merged call and the caller stops
// merging (see merge.go), with the server's error.
func (c *Caller) OnMergeRefused(f func(err error)) { c.mergeRefused.Store(&f) }

// OnFunctionsRefused has f told, once, when the server turns FCALL down (a server before Redis
// 7, or an ACL that forbids it) and the caller runs every call as a script from then on, with
// the server's error.
func (c *Caller) OnFunctionsRefused(f func(err error)) { c.functionsRefused.Store(&f) }

// OnTryAgainExhausted has f told of every call that a Cluster node still answered TRYAGAIN
// when its deadline came (see sendCall), with the error the call returns.
func (c *Caller) OnTryAgainExhausted(f func(err error)) { c.tryAgainExhausted.Store(&f) }

// sender returns how a store sends its calls over client: through a batcher per node where
// the client spreads keys over several servers, else through one.
func (c *Caller) sender(client pipeliner) func(ctx context.Context, cmd redis.Cmder) error {
	switch cl := client.(type) {
	case masterForKey:
		return newNodeBatchers(client, cl.MasterForKey).send
	case shardForKey:
		return newNodeBatchers(client, func(_ context.Context, key string) (*redis.Client, error) {
			return cl.GetShardClientForKey(key)
		}).send
	}
	b := newBatcher(client, true)
	b.refused = &c.mergeRefused
	return b.send
}

// Caller sends the commands of one store: its client, or its client through a batcher.
// Make one with NewCaller.
type Caller struct {
	client redis.Scripter
	send   func(ctx context.Context, cmd redis.Cmder) error
	// scriptsOnly is set once the server turned FCALL down (Redis before 7, or an ACL that
	// forbids it): the store runs every call as a script from then on.
	scriptsOnly atomic.Bool
	// mergeRefused is told when the server refuses a merged call (OnMergeRefused),
	// functionsRefused when it turns FCALL down (OnFunctionsRefused), and tryAgainExhausted
	// when a call is still answered TRYAGAIN at its deadline (OnTryAgainExhausted).
	mergeRefused, functionsRefused, tryAgainExhausted atomic.Pointer[func(error)]
}

// Run runs s once with args, whose first Head elements it sets (the command, the body and
// the number of keys, which the caller sets at args[2]) and whose keys are *string. A client that is not a
// go-redis client runs it through redis.Script, with its own retry policy.
func (c *Caller) Run(ctx context.Context, s *Script, args []any) (any, error) {
	if _, ok := c.client.(processor); !ok {
		return c.runScript(ctx, s, args)
	}
	cmd, err := c.run(ctx, s, args, false)
	if err != nil {
		return nil, err
	}
	return cmd.(onceCmd).Val(), nil
}

// RunInts is Run for a script whose reply is an array of integers, which it returns. go-redis
// reads such a reply into one slice, where Run's reply boxes every integer past 255 in an
// interface of its own.
func (c *Caller) RunInts(ctx context.Context, s *Script, args []any) ([]int64, error) {
	if _, ok := c.client.(processor); !ok {
		v, err := c.runScript(ctx, s, args)
		if err != nil {
			return nil, err
		}
		return int64s(v)
	}
	cmd, err := c.run(ctx, s, args, true)
	if err != nil {
		return nil, err
	}
	return cmd.(intsCmd).Val(), nil
}

// run is Run and RunInts over a go-redis client: it returns the command that answered, an
// onceInts when ints is set, else an onceCmd.
func (c *Caller) run(ctx context.Context, s *Script, args []any, ints bool) (redis.Cmder, error) {
	if s.fn != "" && !c.scriptsOnly.Load() {
		cmd, err := c.fcall(ctx, s, args, ints)
		if !refused(err) {
			return cmd, err
		}
		if c.scriptsOnly.CompareAndSwap(false, true) {
			if f := c.functionsRefused.Load(); f != nil {
				(*f)(err)
			}
		}
	}
	return c.script(ctx, s, args, ints)
}

// script runs s as a script: EVALSHA, and EVAL when the server does not have it.
func (c *Caller) script(ctx context.Context, s *Script, args []any, ints bool) (redis.Cmder, error) {
	cmd, err := c.sendCall(ctx, s, evalshaArg, s.shaArg, args, ints)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		cmd, err = c.sendCall(ctx, s, evalArg, s.srcArg, args, ints)
	}
	return cmd, c.result(ctx, err)
}

// sendCall sends the call of s as name (fcall, evalsha or eval) of body, and again after a
// TRYAGAIN reply, until ctx ends: a Cluster node answers TRYAGAIN, having run nothing, to a
// call whose keys are split between two nodes while their slot moves, as it answers MOVED or
// ASK, which go-redis follows. go-redis sends its own commands again after TRYAGAIN, not a call
// marked NoRetry; nothing else is sent again. The waits double from firstTryAgain up to
// maxTryAgain. A call still answered TRYAGAIN when ctx ends returns that error, which says
// how many times it was sent, and OnTryAgainExhausted is told.
func (c *Caller) sendCall(ctx context.Context, s *Script, name, body any, args []any, ints bool) (redis.Cmder, error) {
	cmd := s.cmd(ctx, name, body, args, ints)
	err := c.send(ctx, cmd)
	wait := firstTryAgain
	for sent := 1; isTryAgain(err); sent++ {
		if sleep(ctx, wait) != nil {
			err = fmt.Errorf("%w (sent %d times, until the call's deadline: the slot kept moving)", err, sent)
			if f := c.tryAgainExhausted.Load(); f != nil {
				(*f)(err)
			}
			return cmd, err
		}
		wait = min(2*wait, maxTryAgain)
		cmd = s.cmd(ctx, name, body, args, ints)
		err = c.send(ctx, cmd)
	}
	return cmd, err
}

// The waits before a call answered TRYAGAIN is sent again: the first, and the longest.
const (
	firstTryAgain = time.Millisecond
	maxTryAgain   = 50 * time.Millisecond
)

// sleep waits for d, or until ctx ends, and then returns ctx.Err().
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isTryAgain reports a TRYAGAIN reply: the node ran nothing (see sendCall).
func isTryAgain(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "TRYAGAIN")
}

// int64s decodes a reply that must be an array of integers.
func int64s(v any) ([]int64, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("reply is a %T, not an array", v)
	}
	out := make([]int64, len(arr))
	for i, e := range arr {
		n, ok := e.(int64)
		if !ok {
			return nil, fmt.Errorf("reply element %d is a %T, not an integer", i, e)
		}
		out[i] = n
	}
	return out, nil
}

// runScript runs s through redis.Script, for a client that is not a go-redis client.
func (c *Caller) runScript(ctx context.Context, s *Script, args []any) (any, error) {
	n := args[2].(int)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = *args[Head+i].(*string)
	}
	return redis.NewScript(s.src).Run(ctx, c.client, keys, args[Head+n:]...).Result()
}

// fcall runs s as its function, loading its library first where the server lacks it. When the
// node of the call's first key has the library already, the call landed on another node (a
// Cluster slot moving to a node that never ran the library, followed by ASK; or a slot moved
// while the client's map of slots still names the old master): it runs as a script, which
// runs wherever it lands, and the library is loaded on its new node once the client's map
// names it.
func (c *Caller) fcall(ctx context.Context, s *Script, args []any, ints bool) (redis.Cmder, error) {
	cmd, err := c.sendCall(ctx, s, fcallArg, s.fnArg, args, ints)
	// A few times at most: each time, the server lost the library again between its loading
	// and the call (FUNCTION FLUSH run over and over).
	for range maxLoads {
		if !isFunctionMissing(err) {
			break
		}
		var had bool
		if had, err = c.load(ctx, s, *args[Head].(*string)); err != nil {
			break
		}
		if had {
			return c.script(ctx, s, args, ints)
		}
		cmd, err = c.sendCall(ctx, s, fcallArg, s.fnArg, args, ints)
	}
	if refused(err) {
		return nil, err
	}
	return cmd, c.result(ctx, err)
}

// result returns the error of a call, and has a Cluster client find the slots again after a
// failure.
func (c *Caller) result(ctx context.Context, err error) error {
	if err != nil {
		reroute(ctx, c.client, err)
	}
	return err
}

// nodeFinder is a client of several servers that tells which one serves a key: the Cluster
// client (the master of the key's slot) and the Ring (the key's shard).
type (
	masterForKey interface {
		MasterForKey(ctx context.Context, key string) (*redis.Client, error)
	}
	shardForKey interface {
		GetShardClientForKey(key string) (*redis.Client, error)
	}
)

// load loads s's library on the server of key, the call's first: FUNCTION LOAD is not routed
// by a key, so on a Cluster or a Ring it goes to the node the client's map names for it. It
// reports whether that server had the library already: loaded meanwhile by another Caller, or
// the call went elsewhere (see fcall).
func (c *Caller) load(ctx context.Context, s *Script, key string) (had bool, err error) {
	var node redis.Cmdable
	switch cl := c.client.(type) {
	case masterForKey:
		n, err := cl.MasterForKey(ctx, key)
		if err != nil {
			return false, err
		}
		node = n
	case shardForKey:
		n, err := cl.GetShardClientForKey(key)
		if err != nil {
			return false, err
		}
		node = n
	case redis.Cmdable:
		node = cl
	default:
		return false, errors.New("ratelimit: the client cannot load a Redis Function")
	}
	err = node.FunctionLoad(ctx, s.lib).Err()
	if err != nil && strings.Contains(err.Error(), "already exists") {
		return true, nil
	}
	return false, err
}

// The errors below are Redis error replies ("ERR Function not found"); HasErrorPrefix looks
// past the "ERR ".

// isFunctionMissing reports whether the server answered that it has no such function: it ran
// nothing.
func isFunctionMissing(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "Function not found")
}

// refused reports whether the server turned Functions down: a server before Redis 7 does not
// know FCALL or FUNCTION, and an ACL may forbid them. Either way it ran nothing. An ACL that
// refuses a call one of its keys (see dataRefused) refuses that call, not Functions.
func refused(err error) bool {
	return err != nil && (redis.HasErrorPrefix(err, "NOPERM") && !dataRefused(err) || redis.HasErrorPrefix(err, "unknown command"))
}

// dataRefused reports whether an ACL refused a call a key or a channel it names, having run
// nothing ("NOPERM this user has no permissions to access one of the keys used as arguments"
// before Redis 7.2, "NOPERM No permissions to access a key" since; a command refused is "no
// permissions to run"): that call fails, and so would it as a script or unmerged.
func dataRefused(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOPERM") && strings.Contains(err.Error(), "permissions to access")
}

// stateReloader is a client that routes by a map of the servers it can reload:
// *redis.ClusterClient.
type stateReloader interface {
	ReloadState(ctx context.Context)
}

// reroute has a Cluster client reload its map of slots after a failed call. go-redis does so
// itself when it retries on another node; a call sent once (NoRetry) would otherwise keep
// going to a dead master until the map's periodic reload, a minute later by default. The
// reload runs in the background, at most one at a time.
func reroute(ctx context.Context, client redis.Scripter, err error) {
	if r, ok := client.(stateReloader); ok && !errors.Is(err, context.Canceled) {
		r.ReloadState(ctx)
	}
}

// The command names as arguments, which a call does not copy to the heap.
var fcallArg, evalshaArg, evalArg any = "fcall", "evalsha", "eval"

// cmd returns the command name (evalsha, eval or fcall) of body (a digest, a source or a
// function's name) with args (see run): an onceInts when ints is set, else an onceCmd.
func (s *Script) cmd(ctx context.Context, name, body any, args []any, ints bool) redis.Cmder {
	args[0], args[1] = name, body
	route := args[2].(int) > 0 // routes FCALL by its first key, as go-redis does EVALSHA
	if ints {
		cmd := redis.NewIntSliceCmd(ctx, args...)
		if route {
			cmd.SetFirstKeyPos(Head)
		}
		if s.merged && name == fcallArg {
			return mergeInts{cmd}
		}
		return onceInts{cmd}
	}
	cmd := redis.NewCmd(ctx, args...)
	if route {
		cmd.SetFirstKeyPos(Head)
	}
	return onceCmd{cmd}
}
