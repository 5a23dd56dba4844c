package ratelimit

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/observe"
)

// fullSeen counts MemoryStoreFull's reports, and nothing else.
type fullSeen struct {
	full atomic.Int64
}

// observer returns the hooks that count into f: MemoryStoreFull alone.
func (f *fullSeen) observer() *Observer {
	return &Observer{MemoryStoreFull: func(bool) { f.full.Add(1) }}
}

// The fallback's memory store at its bound reports as any memory store does, to the Redis
// store's observer and logger, naming itself: it had neither (its warning went to
// slog.Default, and no metric saw it).
func TestFallbackFullReported(t *testing.T) {
	var logged bytes.Buffer
	obs := &fullSeen{}
	c := newStoreConfig(false)
	c.maxKeys, c.res.share, c.res.observer = memoryShards, 1, obs.observer() // one identity a shard
	c.logger = slog.New(slog.NewTextHandler(&logged, nil))
	f := newFallback(c)
	policies := []Policy{{Limit: 10, Window: time.Hour}}
	policies[0], _ = policies[0].compile()
	out := make([]PolicyResult, 1)
	for i := range 4 * memoryShards {
		if _, err := f.check(context.Background(), "ip:"+strconv.Itoa(i), policies, 1, true, out); err != nil {
			t.Fatal(err)
		}
		if out[0].source != observe.SourceFallback {
			t.Fatalf("decided by the %v; want the fallback", out[0].source)
		}
	}
	if obs.full.Load() == 0 {
		t.Error("the fallback's memory store went past its bound, and its observer was not told")
	}
	if !strings.Contains(logged.String(), "the memory store of the local fallback (WithFallback) is full") {
		t.Errorf("the store's logger has no line of the fallback's full memory store:\n%s", logged.String())
	}
}
