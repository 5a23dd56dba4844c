package ratelimit_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// evictionSeen records the eviction policies an Observer is told.
type evictionSeen struct {
	answers
	mu       sync.Mutex
	seen     []string
	degraded []string // StoreDegraded's features, in order
}

func (e *evictionSeen) StoreDegraded(feature string, degraded bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !degraded {
		feature = "-" + feature
	}
	e.degraded = append(e.degraded, feature)
}

func (e *evictionSeen) degradations() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.degraded...)
}

func (e *evictionSeen) RedisEvictionPolicy(policy string, evicts bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if evicts {
		policy += " evicts"
	}
	e.seen = append(e.seen, policy)
}

// observer returns the hooks that record into e.
func (e *evictionSeen) observer() *ratelimit.Observer {
	o := e.answers.observer()
	o.StoreDegraded, o.RedisEvictionPolicy = e.StoreDegraded, e.RedisEvictionPolicy
	return o
}

func (e *evictionSeen) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.seen...)
}

// waitFor polls cond until it holds, failing the test after a generous bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20 s for %s", what)
		}
	}
}

// The store reads Redis's maxmemory-policy when it is made: a policy that can evict the
// limiter's keys is logged once, as a warning, and reported; noeviction is not warned of, nor
// is a policy that evicts on a server without maxmemory, which never evicts (it was, a false
// alarm and an alert); a server that refuses CONFIG is reported as unknown; a policy changed
// later, or a maxmemory set later, is seen at the next read.
func TestRedisEvictionPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		user   string // an ACL user to connect as; "" the default
		want   string // what the observer is told first
		warned bool
	}{
		{"noeviction", []string{"--maxmemory-policy", "noeviction", "--maxmemory", "1gb"}, "", "noeviction", false},
		{"volatile-lru", []string{"--maxmemory-policy", "volatile-lru", "--maxmemory", "1gb"}, "", "volatile-lru evicts", true},
		{"allkeys-lru", []string{"--maxmemory-policy", "allkeys-lru", "--maxmemory", "1gb"}, "", "allkeys-lru evicts", true},
		{"volatile-lru without maxmemory", []string{"--maxmemory-policy", "volatile-lru"}, "", "volatile-lru", false},
		{"config refused", []string{"--maxmemory-policy", "volatile-lru", "--user", "app", "on", ">s3cret", "~*", "&*", "+@all", "-config"}, "app", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := privateClient(t, tc.user, tc.args...)
			var logged syncBuffer
			obs := &evictionSeen{}
			clock := newFakeClock()
			store := ratelimit.NewRedisStore(client, ratelimit.WithObserver(obs.observer()), ratelimit.WithClock(clock),
				ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
			waitFor(t, "the eviction policy", func() bool { return len(obs.get()) > 0 })
			if got := obs.get(); len(got) != 1 || got[0] != tc.want {
				t.Errorf("reported %q, want [%q]", got, tc.want)
			}
			if warned := strings.Contains(logged.String(), "level=WARN"); warned != tc.warned {
				t.Errorf("logged:\n%s\nwarned %v, want %v", logged.String(), warned, tc.warned)
			}
			if tc.user != "" {
				if !strings.Contains(logged.String(), "could not be read") {
					t.Errorf("logged:\n%s\nwant that the policy could not be read", logged.String())
				}
				return
			}
			// A change is seen at the next read, due after five minutes and made by a check.
			if err := client.ConfigSet(context.Background(), "maxmemory-policy", "volatile-ttl").Err(); err != nil {
				t.Fatal(err)
			}
			if err := client.ConfigSet(context.Background(), "maxmemory", "1gb").Err(); err != nil {
				t.Fatal(err)
			}
			l := mustNew(t, store, ratelimit.Policy{Limit: 5, Window: time.Minute})
			allow(t, l, "k", 1)
			clock.Advance(5 * time.Minute)
			allow(t, l, "k", 1)
			waitFor(t, "the changed policy", func() bool { return len(obs.get()) == 2 })
			if got := obs.get(); got[1] != "volatile-ttl evicts" {
				t.Errorf("after the change, reported %q; want volatile-ttl evicts", got)
			}
		})
	}
}

// privateClient is a client of a Redis server of the test's own, started with args, as user
// (password s3cret) when user is not empty.
func privateClient(t *testing.T, user string, args ...string) *redis.Client {
	t.Helper()
	opts := &redis.Options{Addr: redistest.Private(t, args...)}
	if user != "" {
		opts.Username, opts.Password = user, "s3cret"
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	return client
}
