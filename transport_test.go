package ratelimit_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// sleepingClock is a fake clock that a Sleep moves forward: a test of waits runs in no time.
// With tick, each reading moves it that much too: a store call that takes time.
type sleepingClock struct {
	mu   sync.Mutex
	now  time.Time
	tick time.Duration
}

func (c *sleepingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.tick)
	return c.now
}

func (c *sleepingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

// api is a test server that counts its requests and answers what answer says.
func api(t *testing.T, answer func(n int64, w http.ResponseWriter)) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(n.Add(1), w)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func get(t *testing.T, c *http.Client, url string, timeout time.Duration) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}

// The client's requests take their turns in the limiter's quota: the third of 2 per minute
// waits its turn, and one whose turn comes after its deadline fails at once, unsent.
func TestTransportLimits(t *testing.T) {
	clock := &sleepingClock{now: t0}
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 2, Window: time.Minute, Algorithm: algorithms.FixedWindow{}})
	srv, n := api(t, func(int64, http.ResponseWriter) {})
	c := &http.Client{Transport: &ratelimit.Transport{Limiter: l}}
	for i := range 2 {
		if _, err := get(t, c, srv.URL, time.Second); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	if _, err := get(t, c, srv.URL, time.Second); !errors.Is(err, context.DeadlineExceeded) || n.Load() != 2 {
		t.Fatalf("a third request within the minute, 1 s to wait: %v, %d sent; want DeadlineExceeded, unsent", err, n.Load())
	}
	start := clock.Now()
	if _, err := get(t, c, srv.URL, time.Hour); err != nil || n.Load() != 3 {
		t.Fatalf("a third request with time to wait: %v, %d sent", err, n.Load())
	}
	if waited := clock.Now().Sub(start); waited != time.Minute {
		t.Errorf("it waited %v; want the minute to end", waited)
	}
}

// What the server says is honoured: after a 429 with Retry-After, or RateLimit fields with
// nothing left, the key's next request waits until then, or fails at once if it cannot; the
// answers themselves come back to the caller, never retried.
func TestTransportHonoursTheServer(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		wait   time.Duration
	}{
		{"429 Retry-After seconds", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
		}, 2 * time.Minute},
		{"503 Retry-After date", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		}, 90 * time.Second},
		{"RateLimit r=0", func(w http.ResponseWriter) {
			w.Header().Set("RateLimit", `"hourly";r=7;t=3000, "burst";r=0;t=30`)
		}, 30 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock, l, srv, n := answerOnce(t, c.answer)
			client := &http.Client{Transport: &ratelimit.Transport{Limiter: l}}
			first, err := get(t, client, srv.URL, time.Second)
			if err != nil || n.Load() != 1 {
				t.Fatalf("first request: %v, %v", first, err)
			}
			if _, err := get(t, client, srv.URL, time.Second); !errors.Is(err, context.DeadlineExceeded) || n.Load() != 1 {
				t.Fatalf("a request the server said to hold back, 1 s to wait: %v, %d sent", err, n.Load())
			}
			start := clock.Now()
			if _, err := get(t, client, srv.URL, time.Hour); err != nil || n.Load() != 2 {
				t.Fatalf("with time to wait: %v, %d sent", err, n.Load())
			}
			if waited := clock.Now().Sub(start); waited < c.wait-2*time.Second || waited > c.wait {
				t.Errorf("it waited %v; want about %v", waited, c.wait)
			}
		})
	}
}

// answerOnce returns a limiter of 1,000 a second on a clock that its sleeps move, and a test
// server that answers its first request with answer and every other with 200.
func answerOnce(t *testing.T, answer func(w http.ResponseWriter)) (*sleepingClock, *ratelimit.Limiter, *httptest.Server, *atomic.Int64) {
	clock := &sleepingClock{now: t0}
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 1000, Window: time.Second})
	srv, n := api(t, func(n int64, w http.ResponseWriter) {
		if n == 1 {
			answer(w)
		}
	})
	return clock, l, srv, n
}

// A host's limit is its own: the default key is the request's host.
func TestTransportKeysByHost(t *testing.T) {
	clock := &sleepingClock{now: t0}
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)), ratelimit.Policy{Limit: 1, Window: time.Hour})
	a, na := api(t, func(int64, http.ResponseWriter) {})
	b, nb := api(t, func(int64, http.ResponseWriter) {})
	c := &http.Client{Transport: &ratelimit.Transport{Limiter: l}}
	for _, url := range []string{a.URL, b.URL} {
		if _, err := get(t, c, url, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := get(t, c, a.URL, time.Second); err == nil || na.Load() != 1 || nb.Load() != 1 {
		t.Fatalf("each host's first request passes and its second waits: %v, %d, %d", err, na.Load(), nb.Load())
	}
}

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Under an in-flight policy a request holds its slot while it is in flight: until its
// response's body is closed, or until the round trip fails. The slots were never given back,
// so a limit of 1 request at a time allowed 1 per slot lifetime (found by a review).
func TestTransportReleasesSlots(t *testing.T) {
	clock := &sleepingClock{now: t0}
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(clock)),
		ratelimit.Policy{Name: "running", Limit: 1, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	srv, n := api(t, func(int64, http.ResponseWriter) {})
	c := &http.Client{Transport: &ratelimit.Transport{Limiter: l}}
	for i := range 3 {
		if _, err := get(t, c, srv.URL, time.Hour); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	if waited := clock.Now().Sub(t0); n.Load() != 3 || waited != 0 {
		t.Fatalf("3 requests one after the other, 1 at a time: %d sent, after %v; want 3 at once", n.Load(), waited)
	}
	// While a response's body is open, its request is in flight.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := l.Peek(context.Background(), srv.Listener.Addr().String()); d.Allowed {
		t.Error("a slot is free while a response's body is open")
	}
	resp.Body.Close()
	resp.Body.Close() // twice: released once
	if d, _ := l.Peek(context.Background(), srv.Listener.Addr().String()); !d.Allowed {
		t.Error("no slot free once the body is closed")
	}
	// A round trip that fails gives its slot back.
	failing := &http.Client{Transport: &ratelimit.Transport{Limiter: l, Key: func(*http.Request) string { return "down" },
		Base: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("connection refused") })}}
	for i := range 2 {
		if _, err := get(t, failing, srv.URL, time.Hour); err == nil {
			t.Fatalf("request %d through a failing transport: no error", i+1)
		}
	}
	if waited := clock.Now().Sub(t0); waited != 0 {
		t.Errorf("a request after a failed one waited %v; want none", waited)
	}
}

// closeCount is a request body that counts its Close calls.
type closeCount struct{ closed *atomic.Int64 }

func (closeCount) Read([]byte) (int, error) { return 0, io.EOF }
func (b closeCount) Close() error           { b.closed.Add(1); return nil }

// A request the Transport does not send has its body closed all the same, as an
// http.RoundTripper must: one it cannot admit (a cost above the limit, a context that ended
// during the wait) and one of a Transport without a Limiter.
func TestTransportClosesTheBodyItDoesNotSend(t *testing.T) {
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(&sleepingClock{now: time.Unix(0, 0)})),
		ratelimit.Policy{Limit: 2, Window: time.Minute})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		tr   *ratelimit.Transport
		ctx  context.Context
	}{
		{"a cost above the limit", &ratelimit.Transport{Limiter: l, Cost: func(*http.Request) int64 { return 3 }}, context.Background()},
		{"a context that has ended", &ratelimit.Transport{Limiter: l}, ended},
		{"no Limiter", &ratelimit.Transport{}, context.Background()},
	} {
		var closed atomic.Int64
		req, err := http.NewRequestWithContext(tc.ctx, http.MethodPost, "http://api.example/", closeCount{closed: &closed})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tc.tr.RoundTrip(req); err == nil {
			t.Fatalf("%s: the round trip succeeded; want an error", tc.name)
		}
		if n := closed.Load(); n != 1 {
			t.Errorf("%s: the request's body was closed %d times; want once", tc.name, n)
		}
	}
}

// A server's word holds a caller without a deadline at most MaxServerWait (default an hour):
// a Retry-After of two hours, or RateLimit fields that say a day, hold the next request an
// hour by default, and five minutes with MaxServerWait of five minutes. A negative bound is
// an error, the request unsent.
func TestTransportMaxServerWait(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		max    time.Duration
		wait   time.Duration
	}{
		{"Retry-After of two hours, default", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "7200")
			w.WriteHeader(http.StatusTooManyRequests)
		}, 0, time.Hour},
		{"Retry-After of two hours, at most 5 min", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "7200")
			w.WriteHeader(http.StatusTooManyRequests)
		}, 5 * time.Minute, 5 * time.Minute},
		{"Retry-After of a year, at most 3 h", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "31536000")
			w.WriteHeader(http.StatusServiceUnavailable)
		}, 3 * time.Hour, 3 * time.Hour},
		{"RateLimit t of a day, at most 5 min", func(w http.ResponseWriter) {
			w.Header().Set("RateLimit", `"daily";r=0;t=86400`)
		}, 5 * time.Minute, 5 * time.Minute},
		{"Retry-After below the bound", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusTooManyRequests)
		}, 5 * time.Minute, time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock, l, srv, n := answerOnce(t, c.answer)
			client := &http.Client{Transport: &ratelimit.Transport{Limiter: l, MaxServerWait: c.max}}
			for i := range 2 {
				resp, err := client.Get(srv.URL) // no deadline
				if err != nil {
					t.Fatalf("request %d: %v", i+1, err)
				}
				resp.Body.Close()
			}
			if waited := clock.Now().Sub(t0); n.Load() != 2 || waited != c.wait {
				t.Errorf("the request after the server's answer waited %v (%d sent); want %v", waited, n.Load(), c.wait)
			}
		})
	}
	t.Run("negative", func(t *testing.T) {
		l := mustNew(t, ratelimit.NewMemoryStore(), ratelimit.Policy{Limit: 1000, Window: time.Second})
		srv, n := api(t, func(int64, http.ResponseWriter) {})
		client := &http.Client{Transport: &ratelimit.Transport{Limiter: l, MaxServerWait: -time.Second}}
		if _, err := client.Get(srv.URL); err == nil || !strings.Contains(err.Error(), "MaxServerWait") || n.Load() != 0 {
			t.Errorf("MaxServerWait -1s: %v, %d sent; want an error naming MaxServerWait, nothing sent", err, n.Load())
		}
	})
}

// refundsFail is a store whose refunds fail: the slots of a request cannot be given back.
type refundsFail struct{ ratelimit.Store }

func (s refundsFail) Unwrap() ratelimit.Store { return s.Store }
func (refundsFail) Refund(context.Context, string, []ratelimit.Policy, int64, time.Time) error {
	return errors.New("refunds refused")
}

// A round trip that fails, whose in-flight slots then cannot be given back, says so in its
// error: the failure of the release was dropped without a word.
func TestTransportReportsASlotItCouldNotGiveBack(t *testing.T) {
	l := mustNew(t, refundsFail{ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock()))},
		ratelimit.Policy{Name: "slots", Limit: 2, Window: time.Minute, Algorithm: algorithms.InFlight{}})
	tr := &ratelimit.Transport{Limiter: l, Key: func(*http.Request) string { return "partner" },
		Base: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("connection reset") })}
	_, err := tr.RoundTrip(httptest.NewRequest(http.MethodGet, "http://partner.example/x", nil))
	if err == nil || !strings.Contains(err.Error(), "connection reset") || !strings.Contains(err.Error(), "refunds refused") {
		t.Fatalf("RoundTrip: %v; want the round trip's error and the release's", err)
	}
}
