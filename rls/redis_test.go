package rls

import (
	"os"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// redisStore is a Redis store on a key prefix of the test's own, on clk.
func redisStore(t *testing.T, clk ratelimit.Clock) ratelimit.Store {
	s := ratelimit.NewRedisStore(redistest.Standalone(t), ratelimit.WithPrefix(redistest.Prefix(t)), ratelimit.WithClock(clk))
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// redisBenchStore is a Redis store on a key prefix of the benchmark's own.
func redisBenchStore(b *testing.B) ratelimit.Store {
	s := ratelimit.NewRedisStore(redistest.Standalone(b), ratelimit.WithPrefix(redistest.Prefix(b)))
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func init() {
	stores = append(stores, struct {
		name string
		make storeMaker
	}{"redis", redisStore})
}
