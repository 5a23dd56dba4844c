package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/redisscripts"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

// policy is every check's one policy: GCRA at 100/s, which the load spread over the
// identities never exhausts, so every check takes the allowed path, the one that writes.
var policy = ratelimit.Policy{Limit: 100, Window: time.Second}

// env is what every round measures with: the clients of the one redis-server, the scripts and
// the identities.
type env struct {
	s       settings
	goredis *redis.Client  // PoolSize s.goroutines, ContextTimeoutEnabled
	rueidis rueidis.Client // auto-pipelining, DisableCache
	trivial *redis.Script  // the floor: "return 1"
	fn      string         // the name of the core's Redis Function
	keys    []string       // identities, cycled through by every subject
}

func newEnv(ctx context.Context, addr string, s settings) (*env, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{addr}, DisableCache: true, PipelineMultiplex: s.multiplex, MaxFlushDelay: s.flush,
	})
	if err != nil {
		return nil, fmt.Errorf("rueidis: %w", err)
	}
	lib, fn := redisscripts.Function()
	e := &env{
		s:       s,
		goredis: redis.NewClient(&redis.Options{Addr: addr, PoolSize: s.goroutines, ContextTimeoutEnabled: true}),
		rueidis: rc,
		trivial: redis.NewScript("return 1"),
		fn:      fn,
		keys:    loadgen.Identities(s.keys),
	}
	if err := e.trivial.Load(ctx, e.goredis).Err(); err != nil {
		e.close()
		return nil, fmt.Errorf("loading the floor script: %w", err)
	}
	// The raw FCALL finds the library loaded; the stores would load it themselves.
	if err := e.goredis.FunctionLoad(ctx, lib).Err(); err != nil && !strings.Contains(err.Error(), "already exists") {
		e.close()
		return nil, fmt.Errorf("loading the library: %w", err)
	}
	return e, nil
}

func (e *env) close() {
	_ = e.goredis.Close()
	e.rueidis.Close()
}

// caller is one operation under measurement, on an identity.
type caller func(ctx context.Context, key string) error

// subject is one row of the table.
type subject struct {
	name    string
	command string // the Redis command it sends, whose server time is read
	call    caller
}

// The subjects' names, in the table's order; floorName is the floor.
const (
	floorName        = "floor: go-redis EVALSHA return 1"
	goredisStoreName = "go-redis store (Allow)"
	rueidisTrivial   = "rueidis EVALSHA return 1"
	rueidisFcallName = "rueidis raw FCALL"
	rueidisStoreName = "rueidis store (Allow)"
)

var order = []string{floorName, goredisStoreName, rueidisTrivial, rueidisFcallName, rueidisStoreName}

// subjects returns the round's subjects, the floor first, each limiter's keys under a prefix
// of the round's own so that no round inherits another's state.
func (e *env) subjects(ctx context.Context, r int) ([]subject, error) {
	prefix := fmt.Sprintf("rb%d:", r)
	goredisStore, err := ratelimit.New(ratelimit.NewRedisStore(e.goredis, ratelimit.WithPrefix(prefix+"go:")), policy)
	if err != nil {
		return nil, err
	}
	rueidisStore, err := ratelimit.New(newProtoStore(e.rueidis, prefix+"ru:"), policy)
	if err != nil {
		return nil, err
	}
	raw, err := e.rawFcall(ctx, prefix+"raw:")
	if err != nil {
		return nil, err
	}
	return []subject{
		{floorName, "evalsha", e.evalsha},
		{goredisStoreName, "fcall", allow(goredisStore)},
		{rueidisTrivial, "evalsha", e.rueidisEvalsha},
		{rueidisFcallName, "fcall", raw},
		{rueidisStoreName, "fcall", allow(rueidisStore)},
	}, nil
}

// allow calls l.Allow; a denial is an error, since every subject is set up to be allowed.
func allow(l *ratelimit.Limiter) caller {
	return func(ctx context.Context, key string) error {
		d, err := l.Allow(ctx, key)
		if err == nil && !d.Allowed {
			err = fmt.Errorf("check of %s denied: the limits are too low for the load", key)
		}
		return err
	}
}

// evalsha is the floor: the trivial script on the identity's key, through go-redis.
func (e *env) evalsha(ctx context.Context, key string) error {
	return e.trivial.Run(ctx, e.goredis, []string{key}).Err()
}

// rueidisEvalsha is the floor's call through rueidis.
func (e *env) rueidisEvalsha(ctx context.Context, key string) error {
	c := e.rueidis
	return c.Do(ctx, c.B().Evalsha().Sha1(e.trivial.Hash()).Numkeys(1).Key(key).Build()).Error()
}

// rawFcall returns the FCALL the core store sends for an Allow of policy — the same
// function, storage key and ARGV (check.lua: now 0 for the server's TIME, cost 1, mode 1,
// at 0, then the policy's code, limit, window in µs, burst and shadow) — sent with rueidis,
// its reply read only for the allowed flag.
func (e *env) rawFcall(ctx context.Context, prefix string) (caller, error) {
	// The policy as New compiles it and a store receives it: StorageKey would compile an
	// uncompiled one at every call.
	l, err := ratelimit.New(ratelimit.NewMemoryStore(), policy)
	if err != nil {
		return nil, err
	}
	d, err := l.Peek(ctx, "compile")
	if err != nil {
		return nil, err
	}
	p := d.Results()[0].Policy
	args, err := policyArgs(p)
	if err != nil {
		return nil, err
	}
	argv := append([]string{"0", "1", "1", "0"}, args...)
	c := e.rueidis
	return func(ctx context.Context, id string) error {
		key := ratelimit.StorageKey(prefix, id, p, false)
		reply, err := c.Do(ctx, c.B().Fcall().Function(e.fn).Numkeys(1).Key(key).Arg(argv...).Build()).ToArray()
		if err != nil {
			return err
		}
		if len(reply) != 6 {
			return fmt.Errorf("FCALL replied %d elements, want 6", len(reply))
		}
		allowed, err := reply[0].AsInt64()
		if err == nil && allowed != 1 {
			err = fmt.Errorf("check of %s denied: the limits are too low for the load", id)
		}
		return err
	}, nil
}

// agree checks that the prototype store decides as the core store does, under two policies
// of two algorithms whose windows no check outlives: the same verdicts and the same
// remainders, call after call, until both deny.
func (e *env) agree(ctx context.Context) error {
	policies := []ratelimit.Policy{
		{Name: "gcra", Limit: 5, Window: time.Hour},
		{Name: "log", Limit: 3, Window: time.Hour, Algorithm: algorithms.SlidingLog{}},
	}
	core, err := ratelimit.New(ratelimit.NewRedisStore(e.goredis, ratelimit.WithPrefix("agree:go:")), policies...)
	if err != nil {
		return err
	}
	proto, err := ratelimit.New(newProtoStore(e.rueidis, "agree:ru:"), policies...)
	if err != nil {
		return err
	}
	for i := range 5 {
		want, err := core.Allow(ctx, "ip:192.0.2.1")
		if err != nil {
			return fmt.Errorf("agreement: core store: %w", err)
		}
		got, err := proto.Allow(ctx, "ip:192.0.2.1")
		if err != nil {
			return fmt.Errorf("agreement: prototype: %w", err)
		}
		if got.Allowed != want.Allowed {
			return fmt.Errorf("agreement: check %d: the prototype allowed %v, the core store %v", i+1, got.Allowed, want.Allowed)
		}
		for j, w := range want.Results() {
			if g := got.Results()[j]; g.Allowed != w.Allowed || g.Remaining != w.Remaining {
				return fmt.Errorf("agreement: check %d, policy %s: the prototype gave allowed %v remaining %d, the core store %v %d",
					i+1, w.Policy.Name, g.Allowed, g.Remaining, w.Allowed, w.Remaining)
			}
		}
	}
	return nil
}
