package ratelimitprom_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/a7d3e0dd/ratelimit"
	ratelimitprom "github.com/a7d3e0dd/ratelimit/prometheus"
)

// Count a limiter's decisions, and read them as Prometheus scrapes them.
func Example() {
	metrics := ratelimitprom.New()
	reg := prometheus.NewRegistry() // or prometheus.MustRegister(metrics), for the default registry
	reg.MustRegister(metrics)

	store := ratelimit.NewMemoryStore(ratelimit.WithObserver(metrics.Hooks())) // or NewRedisStore
	limiter, err := ratelimit.New(store, ratelimit.Policy{Name: "login", Limit: 2, Window: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		limiter.Allow(context.Background(), "192.0.2.1")
	}

	// What GET /metrics serves, the decisions of the store only.
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for s := bufio.NewScanner(rec.Body); s.Scan(); {
		if line := s.Text(); strings.HasPrefix(line, "ratelimit_decisions_total") && strings.Contains(line, `source="store"`) {
			fmt.Println(line)
		}
	}
	// Output:
	// ratelimit_decisions_total{outcome="allowed",policy="login",shadow="false",source="store"} 2
	// ratelimit_decisions_total{outcome="denied",policy="login",shadow="false",source="store"} 1
}
