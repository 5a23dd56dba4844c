package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every key the Redis store writes has a TTL, so any maxmemory-policy but noeviction
// (volatile-lru, the default of managed services, as much as allkeys-lru) lets Redis evict
// live counters under memory pressure, handing their identities fresh quotas. The store reads
// the policy when it is made and again at most every evictionRecheck (when a check finds a
// read due), each time in a goroutine of one call, and says so once when it can evict, when
// the server refuses to tell, and when it changes. A Redis that cannot be reached is asked
// again at the next check after evictionRetry.

// How often the store reads the servers' maxmemory-policy again: after a read, and after a
// read that could not reach them.
const (
	evictionRecheck = 5 * time.Minute
	evictionRetry   = 10 * time.Second
)

// evictionCheck is what the store knows of its servers' maxmemory-policy.
type evictionCheck struct {
	next atomic.Int64 // Unix nanoseconds of the next read; 0: at the first check
	mu   sync.Mutex   // one read at a time
	seen string       // what was last reported, "" before any
}

// startEviction starts the first read of the servers' maxmemory-policy.
func (s *redisStore) startEviction() {
	s.eviction.next.Store(s.now() + int64(evictionRecheck))
	s.bg.run(s.readEviction)
}

// checkEviction starts a read of the servers' maxmemory-policy when one is due.
func (s *redisStore) checkEviction() {
	now := s.now()
	next := s.eviction.next.Load()
	if now < next || !s.eviction.next.CompareAndSwap(next, now+int64(evictionRecheck)) {
		return
	}
	s.bg.run(s.readEviction)
}

// now returns the time that schedules the reads: the injected clock's, or the system's.
func (s *redisStore) now() int64 {
	if s.clock != nil {
		return s.clock.Now().UnixNano()
	}
	return time.Now().UnixNano()
}

// readEviction reads the maxmemory-policy of every server the store writes to, and reports
// what changed.
func (s *redisStore) readEviction() {
	s.eviction.mu.Lock()
	defer s.eviction.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.bg.ctx, 5*time.Second) // ended by Close too
	defer cancel()
	s.checkCompactServers(ctx)
	policies, unbounded, err := maxmemoryPolicies(ctx, s.client)
	if s.bg.ctx.Err() != nil {
		return // the store was closed: nothing to report
	}
	if err != nil {
		if k := kindOf(err); k == kindUnavailable || k == kindTimeout {
			s.eviction.next.Store(s.now() + int64(evictionRetry)) // down, not refusing: ask again soon
			return
		}
	}
	seen := strings.Join(policies, ",")
	if err != nil {
		seen = "unknown"
	}
	// A server without maxmemory never evicts, whatever its policy: it is reported by its
	// policy, and evicts only once a maxmemory is set (the next read sees it).
	evicts := slices.ContainsFunc(policies, func(p string) bool { return p != "noeviction" && !slices.Contains(unbounded, p) })
	if len(unbounded) > 0 {
		seen += " (without maxmemory: " + strings.Join(unbounded, ",") + ")"
	}
	if seen == s.eviction.seen {
		return
	}
	s.eviction.seen = seen
	log := s.log.get()
	switch {
	case err != nil:
		log.LogAttrs(ctx, slog.LevelWarn, "ratelimit: the Redis maxmemory-policy could not be read (CONFIG GET refused?); if it is not noeviction, Redis may evict live counters under memory pressure and hand their identities fresh quotas",
			slog.String("error", err.Error()))
	case evicts:
		log.LogAttrs(ctx, slog.LevelWarn, "ratelimit: Redis can evict the limiter's keys: under memory pressure it drops live counters and hands their identities fresh quotas. Set maxmemory-policy noeviction, or give the limiter a Redis of its own",
			slog.String("maxmemory_policy", seen))
	case len(unbounded) > 0:
		log.LogAttrs(ctx, slog.LevelInfo, "ratelimit: Redis will not evict the limiter's keys: it has no maxmemory, so its maxmemory-policy does not apply (if one is set, the store says so at its next read, within 5 minutes)",
			slog.String("maxmemory_policy", strings.Join(policies, ",")))
	default:
		log.LogAttrs(ctx, slog.LevelInfo, "ratelimit: Redis will not evict the limiter's keys", slog.String("maxmemory_policy", seen))
	}
	if s.compact && !s.hash && slices.ContainsFunc(policies, func(p string) bool {
		return (strings.Contains(p, "lru") || strings.Contains(p, "lfu")) && !slices.Contains(unbounded, p)
	}) {
		log.LogAttrs(ctx, slog.LevelInfo, "ratelimit: compact state under an LRU or LFU maxmemory-policy: with maxmemory set, Redis shares no numbers, so each key's value takes an object of its own (16 B more per identity); the keys stay short",
			slog.String("maxmemory_policy", seen))
	}
	if o := s.observer; o != nil {
		policy := strings.Join(policies, ",")
		if err != nil {
			policy = ""
		}
		o.redisEvictionPolicy(policy, evicts)
	}
}

// maxmemoryPolicies returns the maxmemory-policy of each server client writes to (each master
// of a Cluster, each shard of a Ring), without repeats, sorted; and those that evict but are
// held by no server with a maxmemory (a server without one never evicts).
func maxmemoryPolicies(ctx context.Context, client redis.Scripter) (policies, unbounded []string, err error) {
	var (
		mu      sync.Mutex
		bounded []string // policies of a server with a maxmemory
	)
	read := func(ctx context.Context, c *redis.Client) error {
		v, err := c.ConfigGet(ctx, "maxmemory*").Result() // one pattern: Redis 6 takes no more
		if err != nil {
			return fmt.Errorf("%s: %w", c.Options().Addr, err)
		}
		p, ok := v["maxmemory-policy"]
		if !ok {
			return fmt.Errorf("%s: CONFIG GET maxmemory-policy returned nothing", c.Options().Addr)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(policies, p) {
			policies = append(policies, p)
		}
		if m, ok := v["maxmemory"]; (!ok || m != "0") && !slices.Contains(bounded, p) {
			bounded = append(bounded, p)
		}
		return nil
	}
	err = forEachServer(ctx, client, read)
	slices.Sort(policies)
	for _, p := range policies {
		if p != "noeviction" && !slices.Contains(bounded, p) {
			unbounded = append(unbounded, p)
		}
	}
	return policies, unbounded, err
}

// forEachServer calls read for each server client writes to: each master of a Cluster, each
// shard of a Ring, the one server of a client.
func forEachServer(ctx context.Context, client redis.Scripter, read func(ctx context.Context, c *redis.Client) error) error {
	switch c := client.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, read)
	case *redis.Ring:
		return c.ForEachShard(ctx, read)
	case *redis.Client:
		return read(ctx, c)
	}
	return fmt.Errorf("a %T cannot be asked its configuration", client)
}

// checkCompactServers warns, once, when a store with compact state writes to a server before
// Redis 7.0, which has no PEXPIRETIME: the scripts then keep TATs in values, and only the
// keys are short. It runs with each read of the eviction policy until a read succeeds.
func (s *redisStore) checkCompactServers(ctx context.Context) {
	if !s.compact || s.hash || s.compactChecked.Load() { // hash state keeps every TAT in a field
		return
	}
	var (
		mu  sync.Mutex
		old []string
	)
	err := forEachServer(ctx, s.client, func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		if v := infoField(info, "redis_version"); before7(v) {
			mu.Lock()
			old = append(old, c.Options().Addr+" "+v)
			mu.Unlock()
		}
		return nil
	})
	if err != nil || s.compactChecked.Swap(true) {
		return // asked again at the next read of the eviction policy
	}
	if len(old) > 0 {
		s.log.get().LogAttrs(ctx, slog.LevelWarn, "ratelimit: compact state on a server before Redis 7.0, which has no PEXPIRETIME: its TATs stay in values (16 B more per identity); the keys are still short",
			slog.String("servers", strings.Join(old, ", ")))
		s.degraded.set(degradedCompactExpiry, true)
	}
}

// before7 reports whether a redis_version is before 7.0.
func before7(version string) bool {
	major, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(major)
	return err == nil && n < 7
}

// infoField returns the value of one "field:value" line of an INFO reply, "" when it has none.
func infoField(info, field string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
