package ratelimit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// Every call of the Redis store has a deadline of its own, also without a guard (issue 34:
// Limiter.Allow and Wait with a context without a deadline waited 5.02 s a call, go-redis's
// read timeout, against a Redis that never answered). The client's timeouts here are a
// minute: a call that returns within 30 s was ended by the store's bound (WithCallTimeout,
// 300 ms), however busy the machine, and one that returns before 300 ms was not ended by it.
// Its error is of kind timeout and names the bound; a context's earlier deadline still ends
// the call first, and then the error names no bound of the store's.
func TestRedisStoreBoundsEveryCall(t *testing.T) {
	const bound = 300 * time.Millisecond
	for _, ctxTimeout := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "ctxtimeout"}[ctxTimeout], func(t *testing.T) {
			p := faultproxy.Start(t, redistest.Addr(t))
			client := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: ctxTimeout,
				DialTimeout: time.Minute, ReadTimeout: time.Minute, WriteTimeout: time.Minute})
			t.Cleanup(func() { client.Close() })
			store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithCallTimeout(bound),
				ratelimit.WithBreaker(0, 0), ratelimit.WithDenialCache(0))
			l := mustNew(t, store, ratelimit.Policy{Limit: 10, Window: time.Hour})
			charged, err := l.Allow(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			p.BlackHole()
			for _, call := range limiterCalls(l, charged) {
				ended := timedCall(t, call.name, call.fn, context.Background())
				if !strings.Contains(ended.Error(), "WithCallTimeout") || !strings.Contains(ended.Error(), bound.String()) {
					t.Errorf("%s: %v; want the error to name the store's bound (%v, WithCallTimeout)", call.name, ended, bound)
				}
				if ended.took < bound {
					t.Errorf("%s returned after %v, before the store's bound of %v", call.name, ended.took, bound)
				}
			}
			// A later deadline of the caller's is bounded as well; an earlier one ends the call.
			later, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if e := timedCall(t, "Allow", limiterCalls(l, charged)[0].fn, later); !strings.Contains(e.Error(), "WithCallTimeout") {
				t.Errorf("Allow with a deadline a minute away: %v; want the store's bound", e)
			}
			earlier, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if e := timedCall(t, "Allow", limiterCalls(l, charged)[0].fn, earlier); strings.Contains(e.Error(), "WithCallTimeout") {
				t.Errorf("Allow with a deadline of 50 ms: %v; want the caller's deadline, not the store's bound", e)
			}
		})
	}
	// The bound by default is the documented one (1 s), not the client's (a minute).
	t.Run("documented", func(t *testing.T) {
		bound := ratelimit.DocumentedCallTimeout(t)
		p := faultproxy.Start(t, redistest.Addr(t))
		client := redis.NewClient(&redis.Options{Addr: p.Addr(), ReadTimeout: time.Minute, WriteTimeout: time.Minute})
		t.Cleanup(func() { client.Close() })
		l := mustNew(t, ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithDenialCache(0)),
			ratelimit.Policy{Limit: 10, Window: time.Hour})
		if _, err := l.Allow(context.Background(), "k"); err != nil {
			t.Fatal(err)
		}
		p.BlackHole()
		e := timedCall(t, "Allow", limiterCalls(l, ratelimit.Decision{})[0].fn, context.Background())
		if want := "call timeout, " + bound.String(); bound != time.Second || !strings.Contains(e.Error(), want) || e.took < bound {
			t.Errorf("Allow after %v: %v; want %q, the documented 1s", e.took, e, want)
		}
	})
}

// limiterCall is a call of a Limiter a test makes on a store that may not answer.
type limiterCall struct {
	name string
	fn   func(context.Context) error
}

// limiterCalls are the Limiter's calls that reach the store.
func limiterCalls(l *ratelimit.Limiter, charged ratelimit.Decision) []limiterCall {
	return []limiterCall{
		{"Allow", func(ctx context.Context) error { _, err := l.Allow(ctx, "k"); return err }},
		{"Wait", func(ctx context.Context) error { _, err := l.Wait(ctx, "k"); return err }},
		{"Peek", func(ctx context.Context) error { _, err := l.Peek(ctx, "k"); return err }},
		{"Refund", func(ctx context.Context) error { return l.Settle(ctx, "k", charged, 0) }},
		{"Reset", func(ctx context.Context) error { return l.Reset(ctx, "k") }},
	}
}

// timedError is a call's error and how long the call took.
type timedError struct {
	error
	took time.Duration
}

// timedCall makes a call that must fail of kind timeout within 30 s.
func timedCall(t *testing.T, name string, fn func(context.Context) error, ctx context.Context) timedError {
	t.Helper()
	start := time.Now()
	err := fn(ctx)
	took := time.Since(start)
	if took > 30*time.Second {
		t.Fatalf("%s with Redis silent returned after %v: the client's timeout (a minute), not the store's bound", name, took)
	}
	if observe.ErrorKind(err) != "timeout" {
		t.Fatalf("%s with Redis silent: %v (after %v); want an error of kind timeout", name, err, took)
	}
	return timedError{err, took}
}
