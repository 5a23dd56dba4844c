//go:build go1.25

package ratelimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// A request that runs longer than its slot's lifetime keeps its slot: the guard renews it every
// third of the lifetime while the handler runs, and releases it when the handler returns.
// Without the renewals the slot would be free after the lifetime, and a second request
// admitted.
func TestInFlightRenewedWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(bubbleClock{})),
			ratelimit.Policy{Name: "slots", Limit: 1, Window: 30 * time.Second, Algorithm: algorithms.InFlight{}})
		release := make(chan struct{})
		end := sync.OnceFunc(func() { close(release) })
		defer end() // a failing test ends the long request too, so the bubble can end
		h := ratelimit.Middleware(l, ratelimit.WithKey(keyOfTest(t)))(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/long" {
				<-release
			}
		}))
		send := func(path string) int {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
			return w.Code
		}
		done := make(chan int, 1)
		go func() { done <- send("/long") }()
		synctest.Wait()
		for _, after := range []time.Duration{10 * time.Second, 29 * time.Second, 31 * time.Second, 5 * time.Minute} {
			time.Sleep(after)
			synctest.Wait() // the renewals due have run
			if code := send("/"); code != http.StatusTooManyRequests {
				t.Fatalf("a second request while the first has run for a while (+%v): %d; want 429", after, code)
			}
		}
		end()
		if code := <-done; code != http.StatusOK {
			t.Fatalf("the long request: %d", code)
		}
		if n := freeSlots(t, l, keyOf(t)); n != 1 {
			t.Fatalf("%d slots free after it ended; want 1", n)
		}
		time.Sleep(time.Hour) // no renewal left running: the bubble would not end otherwise
	})
}

// WaitForSlot: a request refused for want of a slot waits for one, and is served when a slot
// comes back within the wait; else it is refused when the wait ends; and answered 499 when its
// client goes away meanwhile. A request refused by a rate policy does not wait.
func TestWaitForSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(bubbleClock{})),
			ratelimit.Policy{Name: "rate", Limit: 3, Window: time.Hour},
			ratelimit.Policy{Name: "slots", Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}})
		release := make(chan struct{})
		h := ratelimit.Middleware(l, ratelimit.WithKey(keyOfTest(t)), ratelimit.WaitForSlot(2*time.Second))(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/slow" {
					<-release
				}
			}))
		send := func(ctx context.Context, path string) (int, time.Duration) {
			start := time.Now()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil).WithContext(ctx))
			return w.Code, time.Since(start)
		}
		slow := make(chan int)
		go func() { code, _ := send(context.Background(), "/slow"); slow <- code }()
		synctest.Wait()

		// Refused after waiting 2 s for the slot the slow request keeps.
		if code, took := send(context.Background(), "/"); code != http.StatusTooManyRequests || took < 2*time.Second || took > 2100*time.Millisecond {
			t.Fatalf("while the slot stays taken: %d after %v; want 429 after the 2 s wait", code, took)
		}
		// Served when the slot comes back 300 ms into the wait.
		waiter := make(chan [2]int64)
		go func() { code, took := send(context.Background(), "/"); waiter <- [2]int64{int64(code), int64(took)} }()
		time.Sleep(300 * time.Millisecond)
		close(release)
		if code := <-slow; code != http.StatusOK {
			t.Fatalf("the slow request: %d", code)
		}
		got := <-waiter
		if got[0] != http.StatusOK || time.Duration(got[1]) < 300*time.Millisecond || time.Duration(got[1]) > 500*time.Millisecond {
			t.Fatalf("a slot came back 300 ms into the wait: %d after %v; want 200 soon after", got[0], time.Duration(got[1]))
		}
		// The rate has one request left: a refusal by the rate does not wait.
		if code, _ := send(context.Background(), "/"); code != http.StatusOK {
			t.Fatalf("the rate's last request: %d", code)
		}
		if code, took := send(context.Background(), "/"); code != http.StatusTooManyRequests || took != 0 {
			t.Fatalf("refused by the rate: %d after %v; want 429 at once", code, took)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(bubbleClock{})),
			ratelimit.Policy{Name: "slots", Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}})
		g, err := ratelimit.NewGuard(l, ratelimit.WithKey(keyOfTest(t)), ratelimit.WaitForSlot(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		held := g.Check(ratelimit.HTTPRequest(httptest.NewRequest(http.MethodGet, "/", nil)))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan ratelimit.Outcome)
		go func() {
			done <- g.Check(ratelimit.HTTPRequest(httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)))
		}()
		time.Sleep(time.Second)
		cancel()
		if o := <-done; o.Proceed || o.Status != 499 {
			t.Fatalf("client gone while waiting for a slot: proceed %v, status %d; want 499", o.Proceed, o.Status)
		}
		g.Done(&held, 200)
		if n := freeSlots(t, l, keyOf(t)); n != 1 {
			t.Fatalf("%d slots free; want 1 (the gone client took none)", n)
		}
	})
}
