package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSharedDeadline: a store call whose context cannot end gets the guard's timeout as a
// deadline no earlier than asked and at most a grain later, keeps its context's values, and
// ends at it, and so does a context made from it; a context that can end keeps ending with
// its parent.
func TestSharedDeadline(t *testing.T) {
	type key struct{}
	parent := context.WithValue(context.Background(), key{}, "v")
	hour := newTimeouts(time.Hour)
	if hour.grain != int64(time.Millisecond) {
		t.Errorf("the grain of an hour's timeout is %v, want 1ms", time.Duration(hour.grain))
	}
	before := time.Now()
	ctx, cancel := hour.bound(parent)
	after := time.Now()
	defer cancel()
	if _, ok := ctx.(*sharedDeadline); !ok {
		t.Fatalf("a context that cannot end got a %T, want a shared deadline", ctx)
	}
	d, ok := ctx.Deadline()
	if !ok || d.Before(before.Add(time.Hour)) || d.After(after.Add(time.Hour+time.Millisecond)) {
		t.Errorf("deadline %v (%v), want between %v and a millisecond past %v", d, ok, before.Add(time.Hour), after.Add(time.Hour))
	}
	if ctx.Value(key{}) != "v" || ctx.Err() != nil {
		t.Errorf("value %v, error %v; want the parent's value and no error yet", ctx.Value(key{}), ctx.Err())
	}

	short := newTimeouts(time.Millisecond)
	ctx, cancel = short.bound(parent)
	defer cancel()
	child, stop := context.WithCancel(ctx)
	defer stop()
	<-child.Done() // ends with the shared deadline
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Errorf("errors %v and %v (child), want the deadline's", ctx.Err(), child.Err())
	}

	canceled, cancelParent := context.WithCancel(parent)
	ctx, cancel = hour.bound(canceled)
	defer cancel()
	if _, ok := ctx.(*sharedDeadline); ok {
		t.Fatal("a context that can end got a shared deadline, which would not end with it")
	}
	cancelParent()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("error %v, want the parent's cancellation", ctx.Err())
	}
}

// A request whose own deadline has passed already (a gRPC call's, expired before the
// interceptor) is a client gone: its store call's context is done from the start, canceled
// (no store failure), and not a call sent to the store, charged there for a request that
// ended, while the context was canceled a goroutine later (context.AfterFunc).
func TestOwnDeadlinePassedAlready(t *testing.T) {
	parent, cancelParent := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancelParent()
	ctx, cancel := newTimeouts(time.Second).bound(parent)
	defer cancel()
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("the call's context of a request past its deadline: %v at once; want context.Canceled", err)
	}
}
