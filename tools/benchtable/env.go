package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

// env is what every round measures with: the clients of the one redis-server, the floor
// script and the identities.
type env struct {
	s settings
	// client is the recommended go-redis client: ContextTimeoutEnabled, so the store calls
	// it directly; plain is one without, whose calls the store runs in a goroutine each.
	client, plain *redis.Client
	trivial       *redis.Script // the floor: EVALSHA of "return 1" on one key
	// exact is the floor of any exact check: the three calls one cannot do without (the
	// server's TIME, a read and a write with an expiry), and nothing else.
	exact *redis.Script
	// exact3 is the same on three keys (TIME once, then GET and SET PX on each): what the
	// floor of a further policy is, each in its own key.
	exact3   *redis.Script
	keys     []string // identities, cycled through by every Redis figure
	loadName string   // the HTTP load generator: wrk or the Go one
	wrk      string   // path of wrk, "" when it is not installed
	// breakdown holds the INFO commandstats of each Redis subject in the last round.
	breakdown map[string]commandStats
}

// gcra1 is the one-policy subject of the targets; gcra3 the three-policy one.
var (
	gcra1 = []ratelimit.Policy{{Limit: 100, Window: time.Second}}
	gcra3 = []ratelimit.Policy{
		{Limit: 10, Window: time.Second}, {Limit: 100, Window: time.Minute}, {Limit: 1000, Window: time.Hour},
	}
	// oneClient is one GCRA policy that never denies the single client of the HTTP figures.
	// Its interval is a whole microsecond, as gcra1's, so the script keeps the same shape of
	// state.
	oneClient = []ratelimit.Policy{{Limit: 1_000_000, Window: time.Second}}
)

func newEnv(ctx context.Context, addr string, s settings) (*env, error) {
	e := &env{
		s:       s,
		client:  redis.NewClient(&redis.Options{Addr: addr, PoolSize: s.goroutines, ContextTimeoutEnabled: true}),
		plain:   redis.NewClient(&redis.Options{Addr: addr, PoolSize: s.goroutines}),
		trivial: redis.NewScript("return 1"),
		exact: redis.NewScript("local t = redis.call('TIME') redis.call('GET', KEYS[1]) " +
			"redis.call('SET', KEYS[1], t[1] * 1000000 + t[2], 'PX', 10000) return 1"),
		exact3: redis.NewScript("local t = redis.call('TIME') for i = 1, #KEYS do redis.call('GET', KEYS[i]) " +
			"redis.call('SET', KEYS[i], t[1] * 1000000 + t[2], 'PX', 10000) end return 1"),
		keys:      loadgen.Identities(s.keys),
		breakdown: map[string]commandStats{},
	}
	for _, floor := range []*redis.Script{e.trivial, e.exact, e.exact3} {
		if err := floor.Load(ctx, e.client).Err(); err != nil {
			e.close()
			return nil, fmt.Errorf("loading a floor script: %w", err)
		}
	}
	e.wrk, e.loadName = loadgen.Wrk()
	return e, nil
}

func (e *env) close() {
	_ = e.client.Close()
	_ = e.plain.Close()
}

// limiter returns a limiter over client with the policies, its keys under prefix.
func limiter(client *redis.Client, prefix string, policies []ratelimit.Policy, opts ...ratelimit.RedisOption) (*ratelimit.Limiter, error) {
	return ratelimit.New(ratelimit.NewRedisStore(client, append([]ratelimit.RedisOption{ratelimit.WithPrefix(prefix)}, opts...)...), policies...)
}

// caller is one operation under measurement, on an identity.
type caller func(ctx context.Context, key string) error

// check calls l.Allow; a denial is an error, since every subject is set up to be allowed
// (the allowed path is the one that writes).
func check(l *ratelimit.Limiter) caller {
	return func(ctx context.Context, key string) error {
		d, err := l.Allow(ctx, key)
		if err == nil && !d.Allowed {
			err = fmt.Errorf("check of %s denied: the benchmark's limits are too low for its load", key)
		}
		return err
	}
}

// evalsha is the floor: the trivial script on the identity's key.
func (e *env) evalsha(ctx context.Context, key string) error {
	return e.trivial.Run(ctx, e.client, []string{key}).Err()
}

// timeGetSet is the floor of an exact check: TIME, GET and SET PX on the identity's key.
func (e *env) timeGetSet(ctx context.Context, key string) error {
	return e.exact.Run(ctx, e.client, []string{key}).Err()
}

// timeGetSet3 is the floor of an exact check of three policies: TIME, then GET and SET PX on
// three keys of the identity, as a check of three policies finds them.
func (e *env) timeGetSet3(ctx context.Context, key string) error {
	return e.exact3.Run(ctx, e.client, []string{key + ":1", key + ":2", key + ":3"}).Err()
}

func (e *env) ping(ctx context.Context, _ string) error {
	return e.client.Ping(ctx).Err()
}
