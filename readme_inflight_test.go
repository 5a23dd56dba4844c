//go:build go1.25

package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// What the guide's in-flight code does, on synctest's time: two exports run at once; a third
// waits up to 2 s for a slot and, when none frees, is refused 503 with Retry-After: 1; one
// that is waiting when an export ends takes its slot and runs.
func TestReadmeInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mux := http.NewServeMux()
		running, finish := make(chan struct{}), make(chan struct{})
		readmeInFlight(ratelimit.NewMemoryStore(ratelimit.WithClock(bubbleClock{})), mux,
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				running <- struct{}{}
				<-finish // a long export
			}))
		answers := make(chan *httptest.ResponseRecorder, 4)
		export := func() {
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, httptest.NewRequest("POST", "/export", nil))
			answers <- w
		}
		for range 2 {
			go export()
			<-running
		}

		go export() // no slot frees within its wait
		time.Sleep(2*time.Second + time.Millisecond)
		synctest.Wait()
		select {
		case w := <-answers:
			if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
				t.Fatalf("a third export after 2 s of waiting: %d, Retry-After %q; want 503, 1", w.Code, w.Header().Get("Retry-After"))
			}
		default:
			t.Fatal("a third export still waits after 2 s")
		}

		go export() // a slot frees while it waits
		time.Sleep(time.Second)
		synctest.Wait()
		finish <- struct{}{} // the first export ends
		<-running            // the waiting one runs
		for i := range 3 {   // the first, then the two still running
			if i > 0 {
				finish <- struct{}{}
			}
			if w := <-answers; w.Code != http.StatusOK {
				t.Errorf("an export that ran: %d; want 200", w.Code)
			}
		}
	})
}
