package rules

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// Two versions that differ in everything a rule decides: v1 keys by X-A at cost 1, v2 by X-B
// at cost 2; each has a quota of 300 an hour and slots for every request at once. The
// RateLimit-Policy header tells which version answered.
const (
	swapV1 = `version: v1
rules:
  - name: api
    key: header:X-A
    policies:
      - {name: quota-1, algorithm: fixed_window, limit: 300, window: 1h}
      - {name: slots-1, algorithm: in_flight, limit: 1000, window: 1m}
`
	swapV2 = `version: v2
rules:
  - name: api
    key: header:X-B
    cost: 2
    policies:
      - {name: quota-2, algorithm: fixed_window, limit: 300, window: 1h}
      - {name: slots-2, algorithm: in_flight, limit: 1000, window: 1m}
`
	policyV1 = `"quota-1";q=300;w=3600, "slots-1";q=1000;qu="concurrent-requests"`
	policyV2 = `"quota-2";q=300;w=3600, "slots-2";q=1000;qu="concurrent-requests"`
)

// TestSwapUnderLoad swaps the rules back and forth while 64 clients send 1,280 requests over
// Redis: every response is answered under one version, each version admits exactly what its
// own quota allows of the requests it answered (none refused or admitted wrongly across a
// swap), and every slot comes back to the version that took it.
func TestSwapUnderLoad(t *testing.T) {
	client := redistest.Standalone(t)
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(redistest.Prefix(t)),
		ratelimit.WithClock(fakeclock.New(time.Unix(1_800_000_000, 0))))
	v1, err := Parse("v1.yaml", []byte(swapV1))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := Parse("v2.yaml", []byte(swapV2))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(store, v1, WithLogger(slog.New(slog.DiscardHandler)),
		WithResponse(ratelimit.Response{NoXRateLimit: true, IETFDraft: 11}), WithGuardOptions(ratelimit.WithTimeout(time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.FromGuard(e.Guard())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))

	var stop atomic.Bool
	swaps := make(chan int)
	go func() {
		n := 0
		for ; !stop.Load(); n++ {
			if err := e.Apply([]*Set{v1, v2}[n%2]); err != nil {
				t.Error(err)
			}
		}
		swaps <- n
	}()
	type tally struct{ admitted, refused int }
	var (
		mu  sync.Mutex
		got = map[string]*tally{policyV1: {}, policyV2: {}}
		wg  sync.WaitGroup
	)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				r.Header.Set("X-A", "a")
				r.Header.Set("X-B", "b")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				mu.Lock()
				tl, ok := got[w.Header().Get("RateLimit-Policy")]
				switch {
				case !ok:
					t.Errorf("a response under neither version: %d %v", w.Code, w.Header())
				case w.Code == http.StatusOK:
					tl.admitted++
				case w.Code == http.StatusTooManyRequests:
					tl.refused++
				default:
					t.Errorf("status %d", w.Code)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	n := <-swaps
	t1, t2 := got[policyV1], got[policyV2]
	t.Logf("%d swaps; v1 admitted %d, refused %d; v2 admitted %d, refused %d", n, t1.admitted, t1.refused, t2.admitted, t2.refused)
	if n < 2 || t1.admitted+t1.refused == 0 || t2.admitted+t2.refused == 0 {
		t.Fatalf("the load did not run across swaps of both versions")
	}
	// Each version's requests are the only ones charged to its key and policy, so exactly
	// min(requests, quota / cost) of them are admitted.
	for _, c := range []struct {
		name string
		t    *tally
		max  int
	}{{"v1", t1, 300}, {"v2", t2, 150}} {
		if want := min(c.t.admitted+c.t.refused, c.max); c.t.admitted != want {
			t.Errorf("%s admitted %d of its %d requests, want %d", c.name, c.t.admitted, c.t.admitted+c.t.refused, want)
		}
	}
	// What the store holds agrees, and every slot came back.
	for _, c := range []struct {
		set       *Set
		identity  string
		remaining int64
	}{{v1, "hdr:x-a:a", int64(300 - t1.admitted)}, {v2, "hdr:x-b:b", int64(300 - 2*t2.admitted)}} {
		l, err := ratelimit.New(store, c.set.rules[0].Policies...)
		if err != nil {
			t.Fatal(err)
		}
		d, err := l.AllowN(context.Background(), c.identity, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range d.Results() {
			want := c.remaining
			if r.Policy.Algorithm.Name() == "in_flight" {
				want = 1000
			}
			if r.Remaining != want {
				t.Errorf("%s: %s has %d remaining, want %d", c.set.Version(), r.Policy.Name, r.Remaining, want)
			}
		}
	}
}
