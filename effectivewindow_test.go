package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
)

// TestEffectiveWindowIsTrue holds Decision.EffectiveWindow, the t of draft -11's RateLimit
// field, to its definition for every time-based algorithm, on every engine, from states of
// several shapes: the client can spend Remaining at once; having done so, one unit more is
// refused a microsecond before the effective window ends and admitted when it ends.
func TestEffectiveWindowIsTrue(t *testing.T) {
	type visit struct {
		after time.Duration // since the previous request
		cost  int64
	}
	states := map[string][]visit{
		"fresh":             nil,
		"one request":       {{0, 1}},
		"three, then 3.3 s": {{0, 1}, {0, 2}, {3300 * time.Millisecond, 0}},
		"spent":             {{0, 5}},
		"spread":            {{0, 2}, {7 * time.Second, 1}, {4 * time.Second, 1}, {1500 * time.Millisecond, 0}},
		"mid-window start":  {{333 * time.Millisecond, 2}, {9 * time.Second, 2}},
	}
	forEachEngine(t, func(t *testing.T, store ratelimit.Store, clock *fakeClock) {
		ctx := context.Background()
		for _, alg := range rateAlgorithms {
			for name, visits := range states {
				t.Run(alg.Name()+"/"+name, func(t *testing.T) {
					clock.Set(t0)
					l := mustNew(t, store, ratelimit.Policy{Name: "p", Limit: 5, Window: 10 * time.Second, Algorithm: alg})
					key := t.Name()
					for _, v := range visits {
						clock.Advance(v.after)
						if _, err := l.AllowN(ctx, key, v.cost); err != nil {
							t.Fatal(err)
						}
					}
					d, err := l.AllowN(ctx, key, 0) // reads the state as it is
					if err != nil {
						t.Fatal(err)
					}
					w := d.EffectiveWindow
					if w <= 0 {
						t.Fatalf("effective window %v, want a positive time", w)
					}
					if d.Remaining > 0 {
						if got, err := l.AllowN(ctx, key, d.Remaining); err != nil || !got.Allowed {
							t.Fatalf("spending the %d remaining at once: %+v, %v; want admitted", d.Remaining, got, err)
						}
					}
					clock.Advance(w - time.Microsecond)
					if got, err := l.Allow(ctx, key); err != nil || got.Allowed {
						t.Fatalf("%v after %+v, the %d remaining spent: one more admitted (%v); want refused until %v", w-time.Microsecond, d, d.Remaining, err, w)
					}
					clock.Advance(time.Microsecond)
					if got, err := l.Allow(ctx, key); err != nil || !got.Allowed {
						t.Fatalf("%v after %+v, the %d remaining spent: one more refused (%+v, %v); want admitted", w, d, d.Remaining, got, err)
					}
				})
			}
		}
	})
}

// TestRateLimitFieldOfInFlight: an in-flight limit has no effective window, so draft -11's
// RateLimit field carries no t when it binds; draft -10's still says when its leases end.
func TestRateLimitFieldOfInFlight(t *testing.T) {
	for _, c := range []struct {
		draft int
		want  string
	}{
		{11, `"slots";r=1`},
		{10, `"slots";r=1;t=30`},
	} {
		t.Run(fmt.Sprint("draft-", c.draft), func(t *testing.T) {
			l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithClock(newFakeClock())),
				ratelimit.Policy{Name: "slots", Limit: 2, Window: 30 * time.Second, Algorithm: algorithms.InFlight{}},
				ratelimit.Policy{Name: "rate", Limit: 100, Window: time.Minute})
			h := ratelimit.Middleware(l, ratelimit.WithResponse(ratelimit.Response{IETFDraft: c.draft}))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if got := rec.Header().Get("RateLimit"); got != c.want {
				t.Errorf("RateLimit: %q, want %q", got, c.want)
			}
		})
	}
}
