package main

import (
	"fmt"
	"net/http"
	"net/netip"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
)

// accessFigures takes what the allow and deny lists (WithAccess) cost a request through
// net/http Middleware, in-process: an allowed client over the Redis store beside a check of
// the memory store (issue 37: no more), and a client in none of 10,000 denied networks beside
// no list at all (at most 1 µs more). serveOne's client is 203.0.113.7.
func (e *env) accessFigures(f figures, r int) error {
	mem, err := ratelimit.New(ratelimit.NewMemoryStore(), unlimited)
	if err != nil {
		return err
	}
	redisLimiter, err := limiter(e.client, fmt.Sprintf("bt%d:access:", r), []ratelimit.Policy{unlimited})
	if err != nil {
		return err
	}
	allow := ratelimit.WithAccess(ratelimit.Access{Allow: []string{"203.0.113.0/24"}})
	deny := ratelimit.WithAccess(ratelimit.Access{Deny: tenThousandNetworks()})
	for _, s := range []struct {
		name string
		h    http.Handler
	}{
		{"mem", ratelimit.Middleware(mem)(okHandler)},
		{"redis.allowed", ratelimit.Middleware(redisLimiter, allow)(okHandler)},
		{"none", ratelimit.Middleware(mem)(okHandler)},
		{"10k", ratelimit.Middleware(mem, deny)(okHandler)},
	} {
		serve := serveOne(s.h)
		f["acc."+s.name] = nsPerOp(testing.Benchmark(func(b *testing.B) {
			for b.Loop() {
				serve()
			}
		}))
	}
	f["acc.added"] = f["acc.10k"] - f["acc.none"]
	return nil
}

// tenThousandNetworks returns 10,000 distinct /24 networks of 10.0.0.0/8 and 172.16.0.0/12,
// none holding serveOne's client.
func tenThousandNetworks() []string {
	out := make([]string, 0, 10000)
	for i := 0; len(out) < 10000; i++ {
		base := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0})
		if i >= 1<<16 {
			base = netip.AddrFrom4([4]byte{172, 16 + byte((i-1<<16)>>16), byte(i >> 8), byte(i)})
		}
		out = append(out, netip.PrefixFrom(base, 24).String())
	}
	return out
}
