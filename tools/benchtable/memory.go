package main

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

const (
	// memWriters is the number of connections that write the identities. They are opened
	// before the first used_memory reading, so that their buffers are in both readings.
	memWriters = 8
	// settle is how long the server gets before each used_memory reading: Redis finishes a
	// hash table's incremental rehash in its cron (hz 10), and frees the old table only then.
	settle = time.Second
)

// memPrefix is the default prefix of the storage keys, which users get.
const memPrefix = "rl:"

// longLived is the GCRA policy of the used_memory figure: 100 per hour, so that a key lives
// 36 s after one check, longer than the measure. (At 100 per second it would live 10 ms.)
var longLived = ratelimit.Policy{Limit: 100, Window: time.Hour}

// memoryFigures measures Redis used_memory per identity on an emptied server: its growth over
// e.s.identities identities after one check each, divided by their number (key, value, expiry,
// both hash tables' buckets and the allocator's overhead, where MEMORY USAGE of one key tells
// less). Its floor is the same keys written by SET with the value the script stores and the
// same expiry; beside it, the identity alone as the key shows what the key's layout costs. It
// is taken once: it is not noisy. Compact state (WithCompactState) has a floor of its own, its
// key written by SET with what the script keeps there.
func memoryFigures(ctx context.Context, e *env) (figures, error) {
	c := redis.NewClient(&redis.Options{Addr: e.client.Options().Addr, PoolSize: memWriters, ContextTimeoutEnabled: true})
	defer c.Close()
	l, err := limiter(c, memPrefix, []ratelimit.Policy{longLived})
	if err != nil {
		return nil, err
	}
	lc, err := limiter(c, memPrefix, []ratelimit.Policy{longLived}, ratelimit.WithCompactState())
	if err != nil {
		return nil, err
	}
	long3 := []ratelimit.Policy{longLived, {Limit: 1000, Window: 24 * time.Hour}, {Limit: 10000, Window: 7 * 24 * time.Hour}}
	var l1h, l3, l3h, l3hc *ratelimit.Limiter
	for _, v := range []struct {
		l        **ratelimit.Limiter
		policies []ratelimit.Policy
		opts     []ratelimit.RedisOption
	}{
		{&l1h, []ratelimit.Policy{longLived}, []ratelimit.RedisOption{ratelimit.WithHashState()}},
		{&l3, long3, nil},
		{&l3h, long3, []ratelimit.RedisOption{ratelimit.WithHashState()}},
		{&l3hc, long3, []ratelimit.RedisOption{ratelimit.WithHashState(), ratelimit.WithCompactState()}},
	} {
		if *v.l, err = limiter(c, memPrefix, v.policies, v.opts...); err != nil {
			return nil, err
		}
	}
	ttl := longLived.Window / time.Duration(longLived.Limit)
	set := func(key func(id string) string) caller {
		return func(ctx context.Context, id string) error {
			return c.Set(ctx, key(id), strconv.FormatInt(time.Now().Add(ttl).UnixMicro(), 10), ttl).Err()
		}
	}
	floor := set(func(id string) string { return ratelimit.StorageKey(memPrefix, id, longLived, false) })
	bare := set(func(id string) string { return id })
	// Compact state's floor: its key, holding what the script stores there (the TAT's
	// microseconds past its millisecond), expiring a millisecond after the TAT.
	compactFloor := func(ctx context.Context, id string) error {
		tat := time.Now().Add(ttl).UnixMicro()
		key := ratelimit.StorageKey(memPrefix, id, longLived, true)
		return c.Do(ctx, "SET", key, tat%1000, "PXAT", tat/1000+1).Err()
	}
	// Every other algorithm under the same policy, and GCRA at a rate whose interval is no
	// whole µs (7/h), whose state keeps the fraction: the figures of the algorithm table of docs/policies.md.
	perAlgorithm, err := algorithmSubjects(c)
	if err != nil {
		return nil, err
	}
	ids := loadgen.Identities(e.s.identities)
	// Opens the connections and loads the script, outside the measure.
	if err := each(ctx, check(l), ids[:100], memWriters); err != nil {
		return nil, err
	}
	f := figures{}
	for _, m := range append([]memSubject{{"mem.bare", bare}, {"mem.floor", floor}, {"mem.gcra1", check(l)},
		{"mem.cfloor", compactFloor}, {"mem.gcra1c", check(lc)}, {"mem.gcra1h", check(l1h)}, {"mem.gcra3", check(l3)},
		{"mem.gcra3h", check(l3h)}, {"mem.gcra3hc", check(l3hc)}}, perAlgorithm...) {
		if f[m.name], err = perIdentity(ctx, c, ids, m.write); err != nil {
			return nil, err
		}
	}
	return f, c.FlushAll(ctx).Err()
}

// memSubject is one used_memory figure: its name and the check that writes an identity.
type memSubject struct {
	name  string
	write caller
}

// algorithmSubjects are the used_memory subjects of every rate-limiting algorithm but GCRA
// (mem.gcra1) under longLived, named "mem." and the algorithm's name, and GCRA at 7/h
// (mem.gcra1frac).
func algorithmSubjects(c *redis.Client) ([]memSubject, error) {
	var subjects []memSubject
	add := func(name string, p ratelimit.Policy) error {
		l, err := limiter(c, memPrefix, []ratelimit.Policy{p})
		subjects = append(subjects, memSubject{name, check(l)})
		return err
	}
	for _, alg := range algorithms.All() {
		if alg.Name() == (algorithms.GCRA{}).Name() || alg.Name() == (algorithms.InFlight{}).Name() {
			continue
		}
		p := longLived
		p.Algorithm = alg
		if err := add("mem."+alg.Name(), p); err != nil {
			return nil, err
		}
	}
	return subjects, add("mem.gcra1frac", ratelimit.Policy{Limit: 7, Window: time.Hour})
}

// perIdentity empties the server, writes every identity once and returns the growth of
// used_memory per identity.
func perIdentity(ctx context.Context, c *redis.Client, ids []string, write caller) (float64, error) {
	if err := c.FlushAll(ctx).Err(); err != nil {
		return 0, err
	}
	before, err := usedMemory(ctx, c)
	if err != nil {
		return 0, err
	}
	if err := each(ctx, write, ids, memWriters); err != nil {
		return 0, err
	}
	after, err := usedMemory(ctx, c)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(len(ids)), nil
}

// usedMemory returns the server's used_memory once it has settled.
func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	time.Sleep(settle) // lets the server's cron run, not a wait for an event we could see
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(infoField(info, "used_memory"), 10, 64)
}

// each calls call once on every key, from the given number of goroutines.
func each(ctx context.Context, call caller, keys []string, goroutines int) error {
	return loadgen.Each(ctx, loadgen.Call(call), keys, goroutines)
}
