package ratelimit

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Redis without persistence (no RDB snapshots, no AOF) restarts empty. For a policy of
// seconds or minutes that is a brief reset; for a calendar quota (Policy.Period), or any
// window of an hour or more, it hands every identity a fresh day's, month's or hour's quota
// in the middle of the period. The store asks its servers, once, after its first check of
// such a policy (in a goroutine, as it reads the eviction policy), and warns when one of them
// keeps nothing on disk. A server that refuses CONFIG GET is not warned of again: the
// eviction check already said the configuration could not be read.

// longLived is the shortest window whose counts a restart of Redis loses to a noticeable
// effect: the store checks persistence once it checks a policy of a window this long, or a
// calendar policy.
const longLived = time.Hour

// persistenceCheck is what the store knows of its servers' persistence.
type persistenceCheck struct {
	done atomic.Bool  // read (or refused): never again
	next atomic.Int64 // Unix nanoseconds before which no read starts: one runs, or one failed
	mu   sync.Mutex   // one read at a time
}

// checkPersistence starts the read of the servers' persistence when policies hold a
// calendar policy or a window of at least an hour, once, off the request path: a check pays
// a loop over its policies until a long one is seen, then one atomic load.
func (s *redisStore) checkPersistence(policies []Policy) {
	if s.persistence.done.Load() || !holdsLongLived(policies) {
		return
	}
	now := s.now()
	next := s.persistence.next.Load()
	if now < next || !s.persistence.next.CompareAndSwap(next, now+int64(evictionRecheck)) {
		return
	}
	s.bg.run(s.readPersistence)
}

// holdsLongLived reports whether one of policies counts over an hour or more: a calendar
// policy, or a Window of at least longLived.
func holdsLongLived(policies []Policy) bool {
	for i := range policies {
		if policies[i].Period != nil || policies[i].Window >= longLived {
			return true
		}
	}
	return false
}

// readPersistence reads whether each server the store writes to persists its data, and warns
// once when one does not.
func (s *redisStore) readPersistence() {
	s.persistence.mu.Lock()
	defer s.persistence.mu.Unlock()
	if s.persistence.done.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(s.bg.ctx, 5*time.Second) // ended by Close too
	defer cancel()
	volatile, err := unpersisted(ctx, s.client)
	if s.bg.ctx.Err() != nil {
		return // the store was closed: nothing to report
	}
	log := s.log.get()
	if err != nil {
		if k := kindOf(err); k == kindUnavailable || k == kindTimeout {
			s.persistence.next.Store(s.now() + int64(evictionRetry)) // down, not refusing: ask again soon
			return
		}
		s.persistence.done.Store(true)
		// Refused (an ACL, a managed service): the eviction check has said so once already.
		log.LogAttrs(ctx, slog.LevelDebug, "ratelimit: the Redis persistence (save, appendonly) could not be read", slog.String("error", err.Error()))
		return
	}
	s.persistence.done.Store(true)
	if len(volatile) == 0 {
		log.LogAttrs(ctx, slog.LevelInfo, "ratelimit: Redis persists its data (AOF or RDB snapshots): the counts of calendar quotas and long windows survive a restart")
		return
	}
	log.LogAttrs(ctx, slog.LevelWarn, "ratelimit: Redis keeps nothing on disk (save \"\", appendonly no): a restart loses the counts of calendar quotas and long windows, and hands every identity a fresh quota in the middle of its period; enable AOF (appendonly yes) or RDB snapshots (save)",
		slog.String("servers", strings.Join(volatile, ", ")))
}

// unpersisted returns the address of each server client writes to that persists nothing:
// CONFIG GET save is empty and appendonly is no. The two are asked apart, as Redis 6 takes one
// pattern a call.
func unpersisted(ctx context.Context, client redis.Scripter) ([]string, error) {
	var (
		mu       sync.Mutex
		volatile []string
	)
	err := forEachServer(ctx, client, func(ctx context.Context, c *redis.Client) error {
		save, err := c.ConfigGet(ctx, "save").Result()
		if err != nil {
			return err
		}
		aof, err := c.ConfigGet(ctx, "appendonly").Result()
		if err != nil {
			return err
		}
		if strings.TrimSpace(save["save"]) == "" && aof["appendonly"] == "no" {
			mu.Lock()
			volatile = append(volatile, c.Options().Addr)
			mu.Unlock()
		}
		return nil
	})
	slices.Sort(volatile)
	return volatile, err
}
