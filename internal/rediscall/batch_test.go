package rediscall

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestBatcherQueues: with onWire calls on the wire, a call queues; one abandoned at its
// deadline while queued is never sent, and the others leave when a call comes back.
func TestBatcherQueues(t *testing.T) {
	var (
		mu      sync.Mutex
		sent    []string
		release = make(chan struct{})
	)
	b := &batcher{process: func(_ context.Context, cmd redis.Cmder) error {
		mu.Lock()
		sent = append(sent, cmd.Args()[1].(string))
		mu.Unlock()
		if cmd.Args()[1] != "later" {
			<-release // the first calls stay on the wire until the test lets them back
		}
		return nil
	}}
	call := func(ctx context.Context, name string) error {
		return b.send(ctx, redis.NewCmd(ctx, "fcall", name, 0))
	}
	var wg sync.WaitGroup
	for range onWire {
		wg.Add(1)
		go func() { defer wg.Done(); _ = call(context.Background(), "first") }()
	}
	waitFor := func(_ string, done func() bool) { // the string says what it waits for
		for !done() {
			time.Sleep(time.Millisecond) // polls for an event; the test's timeout bounds it
		}
	}
	waitFor("the wire to fill", func() bool { mu.Lock(); defer mu.Unlock(); return len(sent) == onWire })

	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := call(expired, "abandoned"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a queued call whose context ended: %v; want context.Canceled", err)
	}
	later := make(chan error, 1)
	go func() { later <- call(context.Background(), "later") }()
	waitFor("the call to queue", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queued) == 2 })

	close(release)
	if err := <-later; err != nil {
		t.Fatalf("the queued call: %v", err)
	}
	wg.Wait()
	mu.Lock()
	if slices.Contains(sent, "abandoned") || !slices.Contains(sent, "later") {
		t.Errorf("sent %v; want the queued call, and never the abandoned one", sent)
	}
	mu.Unlock()
	// The flush that sent it gives its place on the wire back once it finds the queue empty.
	waitFor("the wire to empty", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.busy == 0 && len(b.queued) == 0 })
}
