package ratelimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/faultproxy"
	"github.com/a7d3e0dd/ratelimit/internal/testing/metricstest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// discardWriter is the cheapest http.ResponseWriter, so a benchmark measures the handler.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })

// passThrough is a store that wraps another and adds nothing — the shape of every metrics,
// fallback or caching layer. It declares only Unwrap, through which the guard finds what the
// wrapped store can do.
type passThrough struct{ ratelimit.Store }

func (p passThrough) Unwrap() ratelimit.Store { return p.Store }

// BenchmarkMiddleware measures the middleware over a bare handler, with the memory store and
// one policy that admits every request: the overhead per request is memory minus bare. A
// pass-through wrapper around the store ("memory-wrapped") must cost no more than a few percent
// and no allocation.
func BenchmarkMiddleware(b *testing.B) {
	l := mustNew(b, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1e9, Window: time.Hour})
	wrapped := mustNew(b, passThrough{ratelimit.NewMemoryStore()}, ratelimit.Policy{Limit: 1e9, Window: time.Hour})
	observed := mustNew(b, ratelimit.NewMemoryStore(ratelimit.WithObserver(metricstest.NopObserver())), ratelimit.Policy{Limit: 1e9, Window: time.Hour})
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", okHandler},
		{"memory", ratelimit.Middleware(l)(okHandler)},
		{"memory-wrapped", ratelimit.Middleware(wrapped)(okHandler)},
		{"memory-observed", ratelimit.Middleware(observed)(okHandler)},
		{"memory-ietf", ratelimit.Middleware(l, ratelimit.WithResponse(ratelimit.Response{IETFDraft: 11}))(okHandler)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = "192.0.2.1:1234"
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				bc.h.ServeHTTP(w, r)
			}
		})
	}
}

// BenchmarkMiddlewareRedis measures the latency the middleware adds with Redis on loopback, at
// 1, 8 and 64 concurrent clients, each with its own IP address. It reports the 50th and 99th
// percentiles of the added latency (those of the limited handler minus those of the bare one,
// measured the same way) and how many requests failed open because Redis did not answer in
// time. With n clients in a closed loop, latency is at least n / throughput: on a machine
// whose cores Redis, the client and the benchmark share, 64 clients queue.
//
// "ctxtimeout" is a go-redis client with ContextTimeoutEnabled, which the middleware calls
// directly; "default" is one without, whose calls the middleware runs in a goroutine of their
// own to keep its deadline.
func BenchmarkMiddlewareRedis(b *testing.B) {
	for _, ctxTimeout := range []bool{false, true} {
		client := redis.NewClient(&redis.Options{Addr: redistest.Addr(b), ContextTimeoutEnabled: ctxTimeout, PoolSize: 64})
		b.Cleanup(func() { client.Close() })
		name := map[bool]string{false: "default", true: "ctxtimeout"}[ctxTimeout]
		b.Run(name, func(b *testing.B) { benchMiddlewareRedis(b, client) })
	}
}

func benchMiddlewareRedis(b *testing.B, client *redis.Client) {
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(b)))
	l := mustNew(b, store, ratelimit.Policy{Limit: 1e9, Window: time.Hour})
	var failed atomic.Int64
	limited := ratelimit.Middleware(l, ratelimit.WithErrorHandler(func(ratelimit.Request, error) { failed.Add(1) }))(okHandler)
	for _, clients := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			failed.Store(0)
			b.ReportAllocs()
			b.ResetTimer()
			got := serveConcurrently(limited, clients, b.N)
			b.StopTimer()
			bare := serveConcurrently(okHandler, clients, b.N)
			for _, p := range []struct {
				name string
				q    float64
			}{{"p50", 0.50}, {"p99", 0.99}} {
				b.ReportMetric(float64(percentile(got, p.q)-percentile(bare, p.q))/float64(time.Microsecond), p.name+"-added-µs")
			}
			b.ReportMetric(float64(failed.Load()), "failed-open")
		})
	}
}

// serveConcurrently serves n requests from the given number of clients, each with its own
// address and one request at a time, and returns every request's latency, sorted.
func serveConcurrently(h http.Handler, clients, n int) []time.Duration {
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = fmt.Sprintf("192.0.2.%d:1234", c)
			w := &discardWriter{h: http.Header{}}
			for i := c; i < n; i += clients {
				clear(w.h)
				start := time.Now()
				h.ServeHTTP(w, r)
				lat[c] = append(lat[c], time.Since(start))
			}
		}()
	}
	wg.Wait()
	all := slices.Concat(lat...)
	slices.Sort(all)
	return all
}

// percentile returns the q-quantile of sorted latencies.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*q))]
}

// BenchmarkOutage measures what a Redis outage adds to a request once the breaker is open:
// Redis black-holed (connections accepted, never answered), the breaker open, decisions from the
// local fallback. It reports the p50 and p99 of the limited handler and of the bare handler,
// measured alike, and the difference of the p99s: the latency the outage adds.
func BenchmarkOutage(b *testing.B) {
	proxy := faultproxy.Start(b, redistest.Addr(b))
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true})
	b.Cleanup(func() { client.Close() })
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(b)),
		ratelimit.WithBreaker(5, time.Second), ratelimit.WithFallback(1))
	l := mustNew(b, store, ratelimit.Policy{Limit: 1e9, Window: time.Hour})
	limited := ratelimit.Middleware(l, ratelimit.WithTimeout(100*time.Millisecond), ratelimit.WithErrorHandler(func(ratelimit.Request, error) {}))(okHandler)
	proxy.BlackHole()
	for range 5 { // the failures that open the breaker, each waiting out the guard's deadline
		limited.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}
	percentiles := func(h http.Handler, n int) (p50, p99 time.Duration) {
		samples := make([]time.Duration, n)
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		w := &discardWriter{h: http.Header{}}
		for i := range samples {
			clear(w.h)
			start := time.Now()
			h.ServeHTTP(w, r)
			samples[i] = time.Since(start)
		}
		slices.Sort(samples)
		return samples[n/2], samples[n*99/100]
	}
	b.ResetTimer()
	p50, p99 := percentiles(limited, b.N)
	b.StopTimer()
	bare50, bare99 := percentiles(okHandler, b.N)
	b.ReportMetric(float64(p50.Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(p99.Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(bare50.Nanoseconds())/1e3, "bare-p50-µs")
	b.ReportMetric(float64((p99-bare99).Nanoseconds())/1e3, "added-p99-µs")
}
