package ratelimit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// Store keeps the state of rate limits. [MemoryStore] and [RedisStore] implement it; a wrapper
// (for metrics, say) can too.
type Store interface {
	// Check evaluates a request of cost units from identity key against every policy, all or
	// nothing: when charge is set and every policy allows the request, it is charged to all of
	// them; otherwise nothing changes. It writes each policy's result to out[i], which has
	// len(policies) elements, each with the time of the check in At.
	Check(ctx context.Context, key string, policies []Policy, cost int64, charge bool, out []algorithms.Result) error
	// Refund gives back a charge of cost units that Check made for identity key at time at
	// (the At of its results), as far as the charge still weighs on each policy: never what
	// time has given back already.
	Refund(ctx context.Context, key string, policies []Policy, cost, at int64) error
	// Reset forgets the state of identity key under the policies.
	Reset(ctx context.Context, key string, policies []Policy) error
}

// Clock tells the time. Inject one with [WithClock] to drive a store from tests.
type Clock interface {
	Now() time.Time
}

// StoreOption configures a store.
type StoreOption func(*storeConfig)

type storeConfig struct {
	prefix  string
	clock   Clock
	maxKeys int
}

func newStoreConfig(opts []StoreOption) storeConfig {
	c := storeConfig{prefix: DefaultPrefix, maxKeys: DefaultMaxKeys}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithPrefix sets the prefix of every storage key (default [DefaultPrefix]). The identity
// that follows is the key's Redis Cluster hash tag, so the prefix may not hold '{' or '}':
// WithPrefix panics if it does.
func WithPrefix(prefix string) StoreOption {
	if strings.ContainsAny(prefix, "{}") {
		panic(fmt.Sprintf("ratelimit: WithPrefix(%q): a prefix may not hold '{' or '}', which would change the keys' cluster hash tag", prefix))
	}
	return func(c *storeConfig) { c.prefix = prefix }
}

// WithClock makes the store take the time from clock. By default the memory store uses the
// system clock and the Redis store the Redis server's TIME, which is one clock for every
// application server.
func WithClock(clock Clock) StoreOption {
	return func(c *storeConfig) { c.clock = clock }
}

// WithMaxKeys bounds the number of keys the memory store holds (default [DefaultMaxKeys]);
// see [MemoryStore] for what happens at the bound. The bound is shared by 64 shards, so it
// is at least 64. The Redis store ignores it: bound Redis with maxmemory. WithMaxKeys panics
// if n is below 1.
func WithMaxKeys(n int) StoreOption {
	if n < 1 {
		panic(fmt.Sprintf("ratelimit: WithMaxKeys(%d): the bound must be at least 1", n))
	}
	return func(c *storeConfig) { c.maxKeys = n }
}
