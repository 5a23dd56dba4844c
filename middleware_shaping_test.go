//go:build go1.25

package ratelimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// bubbleClock is the system clock as a synctest bubble sees it: Now is the bubble's time, and
// Sleep the default clock's own, whose timer runs on the bubble's time.
type bubbleClock struct{}

func (bubbleClock) Now() time.Time { return time.Now() }

func (bubbleClock) Sleep(ctx context.Context, d time.Duration) error {
	return ratelimit.SystemClock.Sleep(ctx, d)
}

// TestMiddlewareShapingWait runs the real shaping wait, on synctest's time: a request waits
// exactly until its slot and is served; a client that goes away while it waits is answered
// 499 at once, and not served.
func TestMiddlewareShapingWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One slot every 30 minutes, two at most.
		l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(bubbleClock{})),
			ratelimit.Policy{Limit: 2, Window: time.Hour, Algorithm: algorithms.LeakyBucket{Shaping: true}})
		var reported []error
		handled := 0
		h := ratelimit.Middleware(l, ratelimit.WithErrorHandler(func(_ ratelimit.Request, err error) { reported = append(reported, err) }))(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled++ }))
		send := func(ctx context.Context) (status int, took time.Duration) {
			start := time.Now()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
			return w.Code, time.Since(start)
		}

		if status, took := send(context.Background()); status != http.StatusOK || took != 0 || handled != 1 {
			t.Fatalf("the first request: got status %d after %v, %d handled; want 200 at once", status, took, handled)
		}
		if status, took := send(context.Background()); status != http.StatusOK || took != 30*time.Minute || handled != 2 {
			t.Fatalf("the second request: got status %d after %v, %d handled; want 200 after its 30-minute wait", status, took, handled)
		}

		// The third waits for its slot too, until its client goes away.
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		var (
			status int
			took   time.Duration
		)
		go func() {
			defer close(done)
			status, took = send(ctx)
		}()
		synctest.Wait() // the request is waiting
		select {
		case <-done:
			t.Fatalf("the third request did not wait: status %d", status)
		default:
		}
		time.Sleep(10 * time.Minute)
		cancel()
		<-done
		if status != 499 || took != 10*time.Minute || handled != 2 || len(reported) != 0 {
			t.Errorf("a client gone after 10 minutes of its wait: got status %d after %v, %d handled, reported %v; want 499 then, not served, nothing reported",
				status, took, handled, reported)
		}

		// The system clock's Sleep returns at once when its context has ended.
		start := time.Now()
		if err := ratelimit.SystemClock.Sleep(ctx, time.Hour); err != context.Canceled || time.Since(start) != 0 {
			t.Errorf("Sleep with an ended context: got %v after %v, want context.Canceled at once", err, time.Since(start))
		}
	})
}
