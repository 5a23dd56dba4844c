package ratelimitprom_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/metricstest"
	ratelimitprom "github.com/a7d3e0dd/ratelimit/prometheus"
)

// discardWriter is the cheapest http.ResponseWriter, so a benchmark measures the handler.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkMiddleware measures the net/http middleware with the memory store and one policy
// that admits every request: without an observer (off), with this package's Observer (on),
// and with one that does nothing (nop), which is what reporting costs the core. The cost of
// the metrics is on minus nop; the target is on within 10% of off.
func BenchmarkMiddleware(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	policy := ratelimit.Policy{Limit: 1e9, Window: time.Hour}
	for _, bc := range []struct {
		name string
		opts []ratelimit.StoreOption
	}{
		{"off", nil},
		{"on", []ratelimit.StoreOption{ratelimit.WithObserver(ratelimitprom.New().Hooks())}},
		{"nop", []ratelimit.StoreOption{ratelimit.WithObserver(metricstest.NopObserver())}},
	} {
		h := ratelimit.Middleware(mustNew(b, ratelimit.NewMemoryStore(bc.opts...), policy))(ok)
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = "192.0.2.1:1234"
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, r)
			}
		})
	}
}

// BenchmarkDecided measures Decided alone, for a decision of one policy from the store: what
// the metrics add to a request, less the event the core builds (see nop above).
func BenchmarkDecided(b *testing.B) {
	var c capture
	l := mustNew(b, ratelimit.NewMemoryStore(ratelimit.WithObserver(&ratelimit.Observer{Decided: c.Decided})), ratelimit.Policy{Limit: 1e9, Window: time.Hour})
	if _, err := allow(l, "k"); err != nil {
		b.Fatal(err)
	}
	e := c.e
	e.Latency = 3 * time.Microsecond
	obs := ratelimitprom.New()
	b.ReportAllocs()
	for b.Loop() {
		obs.Hooks().Decided(e)
	}
}
