package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// TestPushLaggingInstanceIsPendingNotFailure: a push that Redis accepted, with one live
// instance that does not answer within -wait, must exit 3 ("not yet applied") and print the
// report, as the help says. With -wait equal to -timeout (the defaults: 10s and 10s) the
// command's context, started before the push, ends first; the next Fleet call fails and push
// exits 1, as if the push had failed, printing no report.
func TestPushLaggingInstanceIsPendingNotFailure(t *testing.T) {
	client := redistest.Standalone(t)
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	if _, err := rules.Push(t.Context(), client, key, "limits.yaml", []byte(doc("1", "ip"))); err != nil {
		t.Fatal(err)
	}
	// An instance that reports once, then stops watching: its record stays live for three
	// heartbeats (30 s), and it never applies version 2.
	e, err := rules.OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key, rules.WithInstanceName("api-lag"),
		rules.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.WatchRedis(ctx, client, key) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if f, _ := rules.Fleet(t.Context(), client, key); len(f) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the instance never reported")
		}
	}
	cancel()
	<-done
	file := write(t, "v2.yaml", doc("2", "ip"))[0]
	r := cli(t, "push", "-wait", "1s", "-timeout", "1s", "-redis", addr, "-key", key, file)
	r.want(t, 3, "no answer yet from 1: api-lag", "not yet applied")
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}
