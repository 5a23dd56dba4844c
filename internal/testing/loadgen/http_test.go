package loadgen_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

// TestTimedCountsEveryCall: every call is timed, the failed ones counted bad, and the
// percentiles are in order.
func TestTimedCountsEveryCall(t *testing.T) {
	var calls atomic.Int64
	res, err := loadgen.Timed(4, 50*time.Millisecond, func(g int) error {
		if g < 0 || g >= 4 {
			t.Errorf("goroutine number %d; want 0 to 3", g)
		}
		if calls.Add(1)%10 == 0 {
			return errors.New("every tenth call fails")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := calls.Load()
	if res.Bad != n/10 || res.RPS <= 0 || res.P50 > res.P99 || res.P99 > res.P999 {
		t.Fatalf("%d calls gave %+v; want %d bad, a rate, and p50 <= p99 <= p99.9", n, res, n/10)
	}
}

// TestHTTPGoCountsWhatIsNotOK: the Go load generator counts a response that is not 200 as bad.
func TestHTTPGoCountsWhatIsNotOK(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1)%2 == 0 {
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	res, err := loadgen.HTTP(t.Context(), "", srv.URL, 2, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); res.Bad < got/2-2 || res.Bad > got/2+2 {
		t.Fatalf("%d requests, half of them 429, gave %d bad", got, res.Bad)
	}
}
