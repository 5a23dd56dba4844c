package ratelimit

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/redisscripts"
)

var (
	checkScript = redis.NewScript(redisscripts.Check())
	resetScript = redis.NewScript(redisscripts.Reset())
)

// RedisStore keeps rate-limit state in Redis, shared by every instance of a service. A check
// of any number of policies is one script call (EVALSHA; EVAL when the server lost the script),
// atomic and all or nothing. Every key it writes expires when its state stops mattering.
//
// By default the script reads the Redis server's TIME, so application servers with skewed
// clocks still agree; [WithClock] passes the time from Go instead (for tests).
type RedisStore struct {
	client redis.Scripter
	prefix string
	clock  Clock
	// deadlines reports that the client gives up at its context's deadline (go-redis with
	// ContextTimeoutEnabled), so callers need not guard the call themselves.
	deadlines bool
}

// NewRedisStore returns a store over client, which may be any go-redis v9 client: *redis.Client,
// the failover (Sentinel) client, *redis.ClusterClient or *redis.Ring. Options: [WithPrefix],
// [WithClock].
func NewRedisStore(client redis.Scripter, opts ...StoreOption) *RedisStore {
	c := newStoreConfig(opts)
	return &RedisStore{client: client, prefix: c.prefix, clock: c.clock, deadlines: honoursDeadlines(client)}
}

// honoursDeadlines reports whether client gives up at its context's deadline. A go-redis
// client does only with ContextTimeoutEnabled; without it, it waits for its ReadTimeout, and
// the middleware runs each call in a goroutine of its own to keep its deadline.
func honoursDeadlines(client redis.Scripter) bool {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// Check implements [Store].
func (s *RedisStore) Check(ctx context.Context, key string, policies []Policy, cost int64, charge bool, out []algorithms.Result) error {
	mode := 0
	if charge {
		mode = 1
	}
	keys, args := s.scriptArgs(key, policies, cost, mode, 0)
	reply, err := checkScript.Run(ctx, s.client, keys, args...).Int64Slice()
	if err != nil {
		return fmt.Errorf("ratelimit: redis check: %w", err)
	}
	if len(reply) != 5*len(policies)+1 {
		return fmt.Errorf("ratelimit: redis check: got %d integers, want %d", len(reply), 5*len(policies)+1)
	}
	at := reply[len(reply)-1]
	for i := range policies {
		row := reply[5*i : 5*i+5]
		if row[0] != 0 && row[0] != 1 {
			return fmt.Errorf("ratelimit: redis check: bad allowed flag %d", row[0])
		}
		out[i] = algorithms.Result{Allowed: row[0] == 1, Remaining: row[1], ResetAfter: row[2], RetryAfter: row[3], Delay: row[4], At: at}
	}
	return nil
}

// Refund implements [Store].
func (s *RedisStore) Refund(ctx context.Context, key string, policies []Policy, cost, at int64) error {
	keys, args := s.scriptArgs(key, policies, cost, 2, at)
	if err := checkScript.Run(ctx, s.client, keys, args...).Err(); err != nil && err != redis.Nil {
		return fmt.Errorf("ratelimit: redis refund: %w", err)
	}
	return nil
}

// scriptArgs returns the KEYS and ARGV of check.lua; mode is 0 (evaluate), 1 (charge) or 2
// (refund the charge made at at).
func (s *RedisStore) scriptArgs(key string, policies []Policy, cost int64, mode int, at int64) ([]string, []any) {
	keys := make([]string, len(policies))
	args := make([]any, 4, 4+4*len(policies))
	args[0], args[1], args[2], args[3] = int64(0), cost, mode, at
	if s.clock != nil {
		args[0] = s.clock.Now().UnixMicro()
	}
	for i := range policies {
		p := &policies[i]
		keys[i] = storageKey(s.prefix, key, p)
		if p.compiled != nil {
			args = append(args, p.compiled.redisArgs...)
		} else {
			params := p.params()
			args = append(args, p.algorithm().Code(), params.Limit, params.Window, params.Burst)
		}
	}
	return keys, args
}

// Reset implements [Store].
func (s *RedisStore) Reset(ctx context.Context, key string, policies []Policy) error {
	keys := make([]string, len(policies))
	for i := range policies {
		keys[i] = storageKey(s.prefix, key, &policies[i])
	}
	if err := resetScript.Run(ctx, s.client, keys).Err(); err != nil {
		return fmt.Errorf("ratelimit: redis reset: %w", err)
	}
	return nil
}
