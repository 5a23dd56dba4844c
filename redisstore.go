package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/redisscripts"
)

var (
	checkScript = newScript(redisscripts.Check()).withFunction(redisscripts.Function())
	resetScript = newScript(redisscripts.Reset())
)

// redisStore keeps rate-limit state in Redis. See [NewRedisStore].
type redisStore struct {
	client redis.Scripter
	calls  *caller
	prefix string
	clock  Clock // nil: the Redis server's TIME
	// direct reports that the client gives up at its context's deadline (go-redis with
	// ContextTimeoutEnabled), so a call needs no goroutine to keep its deadline.
	direct bool
}

var _ Store = (*redisStore)(nil)

// NewRedisStore returns a store that keeps rate-limit state in Redis, shared by every instance
// of a service. client may be any go-redis v9 client: *redis.Client, the failover (Sentinel)
// client, *redis.ClusterClient or *redis.Ring. Options: [WithPrefix], [WithClock];
// NewRedisStore panics if one is invalid or configures a guard.
//
// A check of any number of policies is one call of a Redis Function (FCALL; on servers before
// Redis 7, a script: EVALSHA), atomic and all or nothing. The store loads the function or the
// script itself, and again whenever a server lost it (FUNCTION FLUSH, SCRIPT FLUSH, a restart,
// a failover): callers never see the loss. Every key it writes expires when its state stops
// mattering. By default the script reads the Redis server's TIME, so application servers with
// skewed clocks still agree.
//
// Every call returns by its context's deadline. A go-redis client gives up at the deadline only
// with ContextTimeoutEnabled; with any other client the store runs each call in a goroutine of
// its own and abandons it at the deadline (its result is dropped when it ends). Set
// ContextTimeoutEnabled for the lowest latency.
func NewRedisStore(client redis.Scripter, opts ...Option) Store {
	c := newStoreConfig("NewRedisStore", false, opts)
	if client == nil {
		panic("ratelimit: NewRedisStore(nil): give it a go-redis client")
	}
	calls := &caller{client: client}
	if p, ok := client.(processor); ok {
		calls.send = p.Process
	}
	return resilient(&redisStore{client: client, calls: calls, prefix: c.prefix, clock: c.clock, direct: honoursDeadlines(client)}, c)
}

// honoursDeadlines reports whether client gives up at its context's deadline.
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

// Clock declares the store's clock (see [Store]): the injected one, or the system clock for
// waiting while the script reads the server's TIME.
func (s *redisStore) Clock() Clock {
	if s.clock == nil {
		return defaultClock
	}
	return s.clock
}

// run runs a script once (see redisonce.go), keeping ctx's deadline whether or not the client
// does.
func (s *redisStore) run(ctx context.Context, script *script, keys []string, args []any) (any, error) {
	if s.direct {
		return s.calls.run(ctx, script, keys, args)
	}
	type reply struct {
		v   any
		err error
	}
	done := make(chan reply, 1)
	go func() {
		v, err := s.calls.run(ctx, script, keys, args)
		done <- reply{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Check implements [Store].
func (s *redisStore) Check(ctx context.Context, key string, policies []Policy, cost int64, charge bool, out []PolicyResult) (time.Time, error) {
	mode := 0
	if charge {
		mode = 1
	}
	keys, args, err := s.scriptArgs(key, policies, cost, mode, 0)
	if err != nil {
		return time.Time{}, err
	}
	v, err := s.run(ctx, checkScript, keys, args)
	if err != nil {
		return time.Time{}, fmt.Errorf("ratelimit: redis check: %w", err)
	}
	reply, err := int64s(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("ratelimit: redis check: %w", err)
	}
	if len(reply) != 5*len(policies)+1 {
		return time.Time{}, fmt.Errorf("ratelimit: redis check: got %d integers, want %d", len(reply), 5*len(policies)+1)
	}
	for i := range policies {
		row := reply[5*i : 5*i+5]
		if row[0] != 0 && row[0] != 1 {
			return time.Time{}, fmt.Errorf("ratelimit: redis check: bad allowed flag %d", row[0])
		}
		out[i].setMicros(row[0] == 1, row[1], row[2], row[3], row[4])
	}
	return time.UnixMicro(reply[len(reply)-1]), nil
}

// Refund implements [Store].
func (s *redisStore) Refund(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) error {
	keys, args, err := s.scriptArgs(key, policies, cost, 2, at.UnixMicro())
	if err == nil {
		_, err = s.run(ctx, checkScript, keys, args)
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("ratelimit: redis refund: %w", err)
	}
	return nil
}

// Renew declares that the store holds in-flight slots (see [Store]).
func (s *redisStore) Renew(ctx context.Context, key string, policies []Policy, cost int64, at time.Time) (time.Time, error) {
	if err := renewable(policies); err != nil {
		return time.Time{}, err
	}
	keys, args, err := s.scriptArgs(key, policies, cost, 3, at.UnixMicro())
	if err != nil {
		return time.Time{}, err
	}
	v, err := s.run(ctx, checkScript, keys, args)
	if err != nil {
		return time.Time{}, fmt.Errorf("ratelimit: redis renew: %w", err)
	}
	reply, err := int64s(v)
	if err == nil && len(reply) != 1 {
		err = fmt.Errorf("got %d integers, want 1", len(reply))
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("ratelimit: redis renew: %w", err)
	}
	return time.UnixMicro(reply[0]), nil
}

// scriptArgs returns the KEYS and ARGV of check.lua; mode is 0 (evaluate), 1 (charge), 2
// (refund the charge made at at) or 3 (renew it).
func (s *redisStore) scriptArgs(key string, policies []Policy, cost int64, mode int, at int64) ([]string, []any, error) {
	if err := compiledAll(policies); err != nil {
		return nil, nil, err
	}
	keys := make([]string, len(policies))
	args := make([]any, 4, 4+5*len(policies))
	args[0], args[1], args[2], args[3] = int64(0), cost, mode, at
	if s.clock != nil {
		args[0] = s.clock.Now().UnixMicro()
	}
	for i := range policies {
		p := &policies[i]
		keys[i] = StorageKey(s.prefix, key, *p)
		args = append(args, p.compiled.redisArgs...)
	}
	return keys, args, nil
}

// Reset implements [Store].
func (s *redisStore) Reset(ctx context.Context, key string, policies []Policy) error {
	keys := make([]string, len(policies))
	for i := range policies {
		keys[i] = StorageKey(s.prefix, key, policies[i])
	}
	if _, err := s.run(ctx, resetScript, keys, nil); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("ratelimit: redis reset: %w", err)
	}
	return nil
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
