package redistest_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// TestStart: a server for a program answers on its address with the given configuration, and
// stop ends it.
func TestStart(t *testing.T) {
	_ = redistest.Addr(t) // skips the test, as every other here, where redis-server is missing
	addr, stop, err := redistest.Start("--maxmemory", "1mb")
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	ctx := ctxT(t)
	if got, err := c.ConfigGet(ctx, "maxmemory").Result(); err != nil || got["maxmemory"] != "1048576" {
		t.Fatalf("CONFIG GET maxmemory = %v, %v; want 1048576", got, err)
	}
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Errorf("PING answered after stop")
	}
}
