package rls

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

// BenchmarkShouldRateLimit is one call with 1 and 3 descriptors, on each store, in process
// (no gRPC): what the server adds to the store's round trip.
func BenchmarkShouldRateLimit(b *testing.B) {
	cfg, err := ParseConfig(File{Name: "bench.yaml", Data: []byte(semanticsConfig)})
	if err != nil {
		b.Fatal(err)
	}
	for _, store := range []struct {
		name string
		make func(b *testing.B) ratelimit.Store
	}{
		{"memory", func(*testing.B) ratelimit.Store { return ratelimit.NewMemoryStore() }},
		{"redis", redisBenchStore},
	} {
		for _, n := range []int{1, 3} {
			b.Run(store.name+"/descriptors="+strconv.Itoa(n), func(b *testing.B) {
				srv, err := NewServer(store.make(b), cfg, WithTimeout(10*time.Second), WithClock(fakeclock.New(fakeclock.T0)), WithLogger(quietLogger()))
				if err != nil {
					b.Fatal(err)
				}
				ds := []string{"ip", "path", "tenant"}
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						i++
						r := request("edge")
						for _, k := range ds[:n] {
							r.Descriptors = append(r.Descriptors, desc(k, strconv.Itoa(i%1000)))
						}
						if _, err := srv.ShouldRateLimit(context.Background(), r); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
