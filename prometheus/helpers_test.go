package ratelimitprom_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
)

func mustNew(t testing.TB, store ratelimit.Store, policies ...ratelimit.Policy) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(store, policies...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// allow checks one request from key within the guard's default deadline.
func allow(l *ratelimit.Limiter, key string) (ratelimit.Decision, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	return l.Allow(ctx, key)
}

// refusedRedis is a Redis client of an address that refuses connections.
func refusedRedis(t testing.TB) *redis.Client {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	return client
}

// silentRedis is a Redis client of a peer that accepts connections and never answers.
func silentRedis(t testing.TB) *redis.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read
			mu.Unlock()
		}
	}()
	client := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ContextTimeoutEnabled: true})
	t.Cleanup(func() {
		client.Close()
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return client
}

// gather returns the metric families of o, through a pedantic registry (which also checks
// that what o collects matches what it describes).
func gather(t testing.TB, o prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(o)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	return byName
}

// sample returns the metric of family name whose labels are labels ("k=v,k=v"), or nil.
func sample(t testing.TB, o prometheus.Collector, name, labels string) *dto.Metric {
	t.Helper()
	mf := gather(t, o)[name]
	if mf == nil {
		return nil
	}
	for _, m := range mf.GetMetric() {
		var got []string
		for _, lp := range m.GetLabel() {
			got = append(got, lp.GetName()+"="+lp.GetValue())
		}
		if strings.Join(got, ",") == labels {
			return m
		}
	}
	return nil
}

// value returns the value of a counter or gauge, failing the test when there is none.
func value(t testing.TB, o prometheus.Collector, name, labels string) float64 {
	t.Helper()
	m := sample(t, o, name, labels)
	switch {
	case m == nil:
		t.Fatalf("no metric %s{%s}", name, labels)
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%s{%s} is neither a counter nor a gauge", name, labels)
	return 0
}
