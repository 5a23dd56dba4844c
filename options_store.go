package ratelimit

import (
	"fmt"
	"log/slog"
	"strings"
)

// storeConfig is what the store options set.
type storeConfig struct {
	prefix  string
	clock   Clock
	maxKeys int
	local   bool // the store answers without I/O: the resilience options do not apply
	res     resilience
	logger  *slog.Logger // nil: slog.Default()
}

// newStoreConfig applies opts to a store's defaults. A store has no error to return, so an
// option that is invalid or configures a guard panics, when the store is made.
func newStoreConfig(constructor string, local bool, opts []Option) storeConfig {
	sc := storeConfig{prefix: defaultPrefix, maxKeys: defaultMaxKeys, local: local}
	if !local {
		sc.res.breakerFailures, sc.res.breakerCooldown = DefaultBreakerFailures, DefaultBreakerCooldown
	}
	c := config{store: &sc}
	c.apply(opts)
	if err := c.err("ratelimit: " + constructor); err != nil {
		panic(err)
	}
	return sc
}

// forStore returns what a store option sets, or nil when the option configures a guard.
func (c *config) forStore(name string) *storeConfig {
	if c.store == nil {
		c.errorf("%s configures a store, not a guard: give it to NewMemoryStore or NewRedisStore", name)
	}
	return c.store
}

// WithPrefix sets the prefix of every storage key (default "rl:"; see [StorageKey]). It
// configures a store. The identity that follows is the key's Redis Cluster hash tag, so the
// prefix may not hold '{' or '}'.
func WithPrefix(prefix string) Option {
	return func(c *config) {
		if sc := c.forStore("WithPrefix"); sc != nil {
			if strings.ContainsAny(prefix, "{}") {
				c.errorf("WithPrefix(%q): a prefix may not hold '{' or '}', which would change the keys' cluster hash tag", prefix)
				return
			}
			sc.prefix = prefix
		}
	}
}

// WithClock makes a store run on clock: its limits read clock.Now, and a [Guard] of a limiter
// over it waits on clock.Sleep for a shaping policy's slot. It configures a store. By default
// the memory store uses the system clock and the Redis store the Redis server's TIME, one clock
// for every application server; inject a clock to drive either from tests.
func WithClock(clock Clock) Option {
	return func(c *config) {
		if sc := c.forStore("WithClock"); sc != nil {
			if clock == nil {
				c.errorf("WithClock(nil): give it a clock")
				return
			}
			sc.clock = clock
		}
	}
}

// defaultMaxKeys is the memory store's default bound on its keys.
const defaultMaxKeys = 1 << 20

// WithMaxKeys bounds the number of keys the memory store holds (default 1,048,576); see
// [NewMemoryStore] for what happens at the bound. It configures a store; the Redis store
// ignores it (bound Redis with maxmemory). The bound is shared by 64 shards, so it is at least
// 64.
func WithMaxKeys(n int) Option {
	return func(c *config) {
		if sc := c.forStore("WithMaxKeys"); sc != nil {
			if n < 1 {
				c.errorf("WithMaxKeys(%d): the bound must be at least 1", n)
				return
			}
			sc.maxKeys = n
		}
	}
}

// config is what options set: a store's or a guard's, whichever is being built.
type config struct {
	store *storeConfig
	guard *guardConfig
	errs  []error
}

func (c *config) apply(opts []Option) {
	for i, o := range opts {
		if o == nil {
			c.errorf("option %d is nil", i+1)
			continue
		}
		o(c)
	}
}

func (c *config) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// err returns every error of the options, each prefixed with what was being built.
func (c *config) err(what string) error {
	switch len(c.errs) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s: %w", what, c.errs[0])
	}
	msgs := make([]string, len(c.errs))
	for i, e := range c.errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%s: %d invalid options: %s", what, len(c.errs), strings.Join(msgs, "; "))
}
