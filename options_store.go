package ratelimit

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
)

// storeConfig is what the store options set.
type storeConfig struct {
	prefix  string
	compact bool // WithCompactState
	hash    bool // WithHashState
	// stored names an identity as the store's keys hold it between their braces (see
	// storedIdentity), for the layers that hear announcements (see forgets.go).
	stored  func(identity string) string
	clock   Clock
	maxKeys int
	local   bool // the store answers without I/O: the resilience options do not apply
	res     resilience
	logger  *slog.Logger // nil: slog.Default()

	errs optionErrors
}

// StoreOption configures either store: [NewMemoryStore] takes it, and [NewRedisStore] too.
// The options that fit the Redis store only have a type of their own ([RedisOption]), so that
// one given to the memory store does not compile. An option given twice is refused, as an
// invalid option is (the store panics, naming it, when it is made): the second would silently
// replace the first.
type StoreOption interface {
	RedisOption
	applyMemory(*storeConfig)
}

// RedisOption configures the Redis store ([NewRedisStore]): a [StoreOption], [WithBreaker],
// [WithCallTimeout], [WithDenialCache], [WithFallback], [WithCompactState] or [WithHashState].
type RedisOption interface{ applyRedis(*storeConfig) }

// The two kinds of store option, each a function of the store's config.
type (
	storeOption func(*storeConfig)
	redisOption func(*storeConfig)
)

func (o storeOption) applyMemory(sc *storeConfig) { o(sc) }
func (o storeOption) applyRedis(sc *storeConfig)  { o(sc) }
func (o redisOption) applyRedis(sc *storeConfig)  { o(sc) }

// newStoreConfig returns a store's defaults, for the constructor to apply its options to.
func newStoreConfig(local bool) *storeConfig {
	sc := &storeConfig{prefix: defaultPrefix, maxKeys: defaultMaxKeys, local: local, stored: storedIdentity}
	if !local {
		sc.res.breakerFailures, sc.res.breakerCooldown = defaultBreakerFailures, defaultBreakerCooldown
		sc.res.callTimeout = defaultCallTimeout
		sc.res.denials = defaultDenialCache
	}
	return sc
}

// done checks the options applied: a store has no error to return, so an invalid option
// panics, when the store is made.
func (sc *storeConfig) done(constructor string) {
	if err := sc.errs.err("ratelimit: " + constructor); err != nil {
		panic(err)
	}
}

// errorf records an invalid option.
func (sc *storeConfig) errorf(format string, args ...any) { sc.errs.add(format, args...) }

// once records that the option name was given, and reports whether it was the first time (see
// optionErrors.once).
func (sc *storeConfig) once(name string) bool { return sc.errs.once(name, "") }

// WithPrefix sets the prefix of every key the store writes (default "rl:"), and of the channel
// on which the Redis store announces refunds and resets ("rl:forget"). The identity that
// follows it is the key's Redis Cluster hash tag, so the prefix may not hold '{' or '}'. With
// [WithCompactState] the prefix is in the keys' digests, not at their start.
func WithPrefix(prefix string) StoreOption {
	return storeOption(func(sc *storeConfig) {
		if !sc.once("WithPrefix") {
			return
		}
		if strings.ContainsAny(prefix, "{}") {
			sc.errorf("WithPrefix(%q): a prefix may not hold '{' or '}', which would change the keys' cluster hash tag", prefix)
			return
		}
		sc.prefix = prefix
	})
}

// WithCompactState makes the Redis store keep each identity's state in as few bytes as Redis
// allows, for services with many millions of identities: keys of 14 bytes, digests of the
// prefix, the identity and the policy (see [StorageKey]), in place of readable ones
// (see [StorageKey]); and, on Redis 7.0 and later, the theoretical arrival time of GCRA and
// the buckets in the key's expiry, with a number below 1,000 as its value, which Redis shares
// among keys rather than storing it. One identity under one GCRA policy then takes about 100
// bytes of used_memory, not 132 (docs/performance.md). Decisions are the same, exactly.
//
// The price: keys that cannot be read back to an identity (the ratelimit command takes
// -compact to find them) and do not start with the prefix (an ACL of key patterns, or a SCAN
// for the prefix, does not find them; announcements stay on the prefix's channel); a
// PEXPIRETIME per check of a known identity (before Redis 7.0, which has none, the TATs stay
// in values: the store logs a warning). The state in expiry is written on the server's
// clock only (not with [WithClock]); moving a key between servers (MIGRATE, DUMP and RESTORE)
// carries its expiry as a time to live, so its identity is admitted later by the time the move
// took, never sooner; under a maxmemory-policy that evicts by LRU or LFU, with maxmemory set,
// Redis shares no numbers and only the keys shrink (the store logs it). With [WithHashState],
// the hash's key is compact and the TATs stay in its fields. Switching an application to
// compact state, or back, starts every identity afresh: its keys are others.
func WithCompactState() RedisOption {
	return redisOption(func(sc *storeConfig) {
		if sc.once("WithCompactState") {
			sc.compact = true
		}
	})
}

// WithHashState makes the Redis store keep all of an identity's state in one hash, a field
// per policy, for services whose policy lists combine windows (10/s and 100/min and 1000/h):
// one key per identity rather than one per policy, read and written once per check whatever
// the number of policies. A check of three policies then takes about a third less of Redis's
// time, and an identity under three policies about 40 % of the bytes (docs/performance.md).
// Decisions are the same, exactly.
//
// The price: an identity under one policy takes about 30 bytes more than with a key of its
// own, and its check a little more of Redis's time (a hash must be read, written and kept
// alive); the hash lives as long as its longest-lived policy needs. The sliding log and
// in-flight limits keep a sorted set each, under keys of their own, as without this option.
// The hash is prefix + "{" + identity + "}" (the fields are the tags that end each policy's
// key, see [StorageKey]); with [WithCompactState] too, a 14-byte digest of the prefix and
// the identity. Switching an application to hash state, or back, starts every identity
// afresh under the policies whose state moves to the hash or out of it (their state is under
// other keys); a sliding log or an in-flight limit keeps its key, and its count.
func WithHashState() RedisOption {
	return redisOption(func(sc *storeConfig) {
		if sc.once("WithHashState") {
			sc.hash = true
		}
	})
}

// WithClock makes a store run on clock: its limits read clock.Now, and a [Guard] of a limiter
// over it waits on clock.Sleep for a shaping policy's slot. By default the memory store uses
// the system clock and the Redis store the Redis server's TIME, one clock for every
// application server; inject a clock to drive either from tests.
func WithClock(clock Clock) StoreOption {
	return storeOption(func(sc *storeConfig) {
		if !sc.once("WithClock") {
			return
		}
		if clock == nil {
			sc.errorf("WithClock(nil): give it a clock")
			return
		}
		sc.clock = clock
	})
}

// defaultMaxKeys is the memory store's default bound on its keys.
const defaultMaxKeys = 1 << 20

// WithMaxKeys bounds the number of keys a store holds in this process's memory (default
// 1,048,576): the memory store's, and the Redis store's local fallback's ([WithFallback]),
// which a long outage fills with every identity it meets. See [NewMemoryStore] for what
// happens at the bound. The bound is shared by 64 shards, so it is at least 64. A Redis store
// given it without WithFallback panics, naming it: it would bound nothing (bound Redis itself
// with its maxmemory).
func WithMaxKeys(n int) StoreOption {
	return storeOption(func(sc *storeConfig) {
		if !sc.once("WithMaxKeys") {
			return
		}
		if n < 1 {
			sc.errorf("WithMaxKeys(%d): the bound must be at least 1", n)
			return
		}
		sc.maxKeys = n
	})
}

// optionErrors are the errors of the options given to one constructor, and the names of the
// options given (see once).
type optionErrors struct {
	list  []error
	given []string
}

// add records an invalid option.
func (e *optionErrors) add(format string, args ...any) {
	e.list = append(e.list, fmt.Errorf(format, args...))
}

// once records that the option name was given, and reports whether it was the first time; the
// second time it records the error: the second would silently replace the first. hint says
// how to give in one option what the two meant, or is "".
func (e *optionErrors) once(name, hint string) bool {
	if !slices.Contains(e.given, name) {
		e.given = append(e.given, name)
		return true
	}
	if hint == "" {
		hint = "give it once"
	}
	e.add("%s given twice: the second would silently replace the first; %s", name, hint)
	return false
}

// err returns every error of the options, each prefixed with what was being built.
func (e optionErrors) err(what string) error {
	switch len(e.list) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s: %w", what, e.list[0])
	}
	msgs := make([]string, len(e.list))
	for i, e := range e.list {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%s: %d invalid options: %s", what, len(e.list), strings.Join(msgs, "; "))
}
