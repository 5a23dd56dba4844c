package rls

import (
	"cmp"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// WithReferenceKeys counts the fixed windows on client in envoyproxy/ratelimit's own keys
// and arithmetic, so that this server and the reference share every such count on one Redis:
// a rule of the file with a single fixed window (no algorithm, no also) and a request-supplied
// limit. The key is prefix (the reference's CACHE_KEY_PREFIX, "" by default), the domain, "_",
// each entry's key and value followed by "_", and the start of the window in Unix seconds, as
// in the reference's src/limiter/cache_key.go: "edge_remote_address_10.0.0.1_1767225600".
// Each descriptor is one INCRBY of its hits and one EXPIRE of its unit's length, all the
// descriptors of a call in one pipeline; it is over its limit when the count after the
// increment exceeds requests_per_unit, and every hit is counted, a denied one too (the
// reference's rule, not this library's). The windows are the reference's: aligned to the
// epoch, of the unit's length, on this server's clock (WithClock). The rules with an
// algorithm or several windows, which the reference does not have, stay in the store.
//
// The counts bypass the store: its circuit breaker and its fallback ([ratelimit.WithFallback])
// do not apply to them, only the server's timeout and fail mode. Give client
// ContextTimeoutEnabled, so that the timeout bounds its calls.
func WithReferenceKeys(client redis.Cmdable, prefix string) Option {
	return named(func(s *Server) error {
		if client == nil {
			return errors.New("rls: WithReferenceKeys(nil, ...): give the Redis client the reference counts on")
		}
		s.refs = &refCounter{client: client, prefix: prefix}
		return nil
	}, "WithReferenceKeys")
}

// refCounter counts descriptors in the reference's keys.
type refCounter struct {
	client redis.Cmdable
	prefix string
}

// resolve marks ch, a descriptor with a limit of one fixed window, as counted in the
// reference's key of domain and entries.
func (rc *refCounter) resolve(ch *check, domain string, entries []entry) {
	var b strings.Builder
	b.WriteString(rc.prefix)
	b.WriteString(domain)
	b.WriteByte('_')
	for _, e := range entries {
		b.WriteString(e.key)
		b.WriteByte('_')
		b.WriteString(e.value)
		b.WriteByte('_')
	}
	ch.ref, ch.refKey, ch.limiter = true, b.String(), nil
}

// run counts every check marked ref at now, in one pipeline, and sets their decisions, or
// each its own error: the same for all when the pipeline fails, that of its own commands when
// one fails alone (an INCRBY that would overflow a count a huge hits_addend left) and the
// others are counted.
func (rc *refCounter) run(ctx context.Context, checks []check, now time.Time) {
	type pending struct {
		ch     *check
		count  *redis.IntCmd
		expire *redis.BoolCmd
		reset  int64 // seconds to the end of the window
	}
	var (
		todo []pending
		pipe = rc.client.Pipeline()
		sec  = now.Unix()
	)
	for i := range checks {
		ch := &checks[i]
		if !ch.ref {
			continue
		}
		w, _ := unitWindow(ch.limit.Unit) // resolve checked it
		div := int64(w / time.Second)
		key := ch.refKey + strconv.FormatInt(sec/div*div, 10)
		incr := pipe.IncrBy(ctx, key, int64(min(ch.hits, math.MaxInt64)))
		expire := pipe.Expire(ctx, key, w)
		todo = append(todo, pending{ch, incr, expire, div - sec%div})
	}
	_, _ = pipe.Exec(ctx) // each command holds its own error, the pipeline's when it failed
	for _, p := range todo {
		reset := time.Duration(p.reset) * time.Second
		if overflowed(p.count.Err()) { // the count is past 2^63-1 already: over any limit
			p.ch.d = decided{resetAfter: reset, effectiveWindow: reset}
			continue
		}
		if err := cmp.Or(p.count.Err(), p.expire.Err()); err != nil {
			p.ch.err = err // counted without an expiry, it fails: nothing is left silently
			continue
		}
		after := uint64(p.count.Val())
		limit := uint64(p.ch.limit.RequestsPerUnit)
		p.ch.d = decided{allowed: after <= limit, resetAfter: reset, effectiveWindow: reset}
		if after <= limit {
			p.ch.d.remaining = int64(limit - after)
		}
	}
}

// overflowed reports whether err is Redis refusing an INCRBY whose count would pass 2^63-1
// (a huge hits_addend earlier in the window): the count is over every limit, and so is the
// descriptor, until its window ends (the reference fails the whole call instead).
func overflowed(err error) bool {
	return err != nil && strings.Contains(err.Error(), "increment or decrement would overflow")
}
