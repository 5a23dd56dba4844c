package ratelimit_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
)

// transitions counts an Observer's breaker changes by the state changed to.
type transitions struct {
	answers
	to [3]atomic.Int64
}

func (c *transitions) BreakerChanged(_, to observe.BreakerState) { c.to[to].Add(1) }

// observer returns the hooks that count into c.
func (c *transitions) observer() *ratelimit.Observer {
	o := c.answers.observer()
	o.BreakerChanged = c.BreakerChanged
	return o
}

// During a Redis outage under load, only the requests already waiting on Redis when it began,
// and the breaker's probes (one at a time), wait for their deadline; every other request is
// decided at once. The log says open (cause unavailable), half-open, closed. Redis is killed
// and restarted while 8 clients send requests; a request that took most of its 1 s deadline
// paid it (counted, not timed against a bound).
func TestOutageUnderLoad(t *testing.T) {
	// go-redis dials again and again for longer than the deadline: a call under way when
	// Redis goes waits for its deadline.
	client := redis.NewClient(&redis.Options{Addr: redistest.Addr(t), ContextTimeoutEnabled: true, DialerRetries: 30})
	t.Cleanup(func() { client.Close() })
	var logged syncBuffer
	obs := &transitions{}
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithObserver(obs.observer()),
		ratelimit.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	l := mustNew(t, store, ratelimit.Policy{Limit: 1_000_000_000, Window: time.Second})
	const timeout = time.Second
	h := ratelimit.Middleware(l, ratelimit.WithTimeout(timeout))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))

	const workers = 8
	var (
		results [3]atomic.Int64 // allowed, unlimited, other
		paid    atomic.Int64    // requests that took most of the deadline
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				start := time.Now()
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
				if time.Since(start) >= timeout*9/10 {
					paid.Add(1)
				}
				switch {
				case w.Code != http.StatusOK:
					results[2].Add(1)
				case w.Header().Get("X-RateLimit-Limit") != "":
					results[0].Add(1)
				default:
					results[1].Add(1) // unlimited: no decision, no headers
				}
			}
		}()
	}
	waitFor(t, "requests admitted by Redis", func() bool { return results[0].Load() >= 200 })
	redistest.Kill(t)
	waitFor(t, "a failed probe", func() bool { return obs.to[observe.BreakerHalfOpen].Load() >= 2 && results[1].Load() >= 200 })
	redistest.Restart(t)
	allowedBefore := results[0].Load()
	waitFor(t, "Redis deciding again", func() bool {
		return obs.to[observe.BreakerClosed].Load() >= 1 && results[0].Load() >= allowedBefore+200
	})
	stop.Store(true)
	wg.Wait()

	probes := obs.to[observe.BreakerHalfOpen].Load()
	if n := paid.Load(); n > workers+probes {
		t.Errorf("%d requests waited for their deadline; want at most %d (%d in flight when Redis went, %d probes)", n, workers+probes, workers, probes)
	}
	if results[2].Load() != 0 {
		t.Errorf("%d requests were refused; want none (fail-open)", results[2].Load())
	}
	var order []string
	for _, line := range strings.Split(logged.String(), "\n") {
		for _, what := range []string{"breaker opened", "breaker half-open", "breaker closed"} {
			if strings.Contains(line, what) {
				order = append(order, what)
				if what == "breaker opened" && !strings.Contains(line, "kind=unavailable") {
					t.Errorf("the breaker opened for another cause: %s", line)
				}
			}
		}
	}
	if got := strings.Join(order, " → "); got != "breaker opened → breaker half-open → breaker closed" {
		t.Errorf("breaker log: %s; want opened → half-open → closed\n%s", got, logged.String())
	}
	t.Logf("admitted %d, unlimited %d; %d paid the deadline, %d probes", results[0].Load(), results[1].Load(), paid.Load(), probes)
}
