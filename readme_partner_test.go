package ratelimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// readmePartner is README's worker calling a partner API, as written but for the Redis store's
// options (TestReadmePartner holds the two to README's block, the options aside): the test's
// clock and prefix.
func readmePartner(ctx context.Context, rdb *redis.Client, requests []*http.Request, callPartner func(context.Context, *http.Request) error, opts ...ratelimit.RedisOption) error {
	limiter, err := ratelimit.New(ratelimit.NewRedisStore(rdb, opts...),
		ratelimit.Policy{Name: "partner-api", Limit: 20, Window: time.Second, Algorithm: algorithms.SlidingLog{}})
	if err != nil {
		return err
	}
	for _, req := range requests {
		if _, err := limiter.Wait(ctx, "partner-api"); err != nil {
			return err // ctx ended, or its deadline comes before the turn
		}
		if err := callPartner(ctx, req); err != nil {
			return err
		}
	}
	return nil
}

// partner is a test API limited to limit calls a second as a partner counts them: in each
// aligned second of clock, and in every interval of one second wherever it starts. A call
// over either count is refused with 429 and not counted.
type partner struct {
	clock    ratelimit.Clock
	limit    int
	mu       sync.Mutex
	admitted []time.Time
	refused  []string
}

func (p *partner) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	second, sliding := 1, 1 // this call's aligned second, and the second ending with it
	for _, a := range p.admitted {
		if a.Truncate(time.Second).Equal(now.Truncate(time.Second)) {
			second++
		}
		if now.Sub(a) < time.Second {
			sliding++
		}
	}
	if second > p.limit || sliding > p.limit {
		p.refused = append(p.refused, fmt.Sprintf("at +%v: call %d of its aligned second, %d of the second ending with it", now.Sub(t0), second, sliding))
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	p.admitted = append(p.admitted, now)
}

// README's partner API "limited to 20 requests a second across the fleet", seen from the
// partner's side: three instances run README's worker over one Redis, 40 calls each, and a
// partner that counts 20 a second — in aligned seconds and in any sliding second — refuses
// none of them. GCRA's default burst (20 at once, then 20 more in the same second) would see
// 19 refused.
func TestReadmePartner(t *testing.T) {
	got := strings.Split(strings.ReplaceAll(strings.Join(readmetest.FuncBody(t, "readme_partner_test.go", "readmePartner"), "\n"), "NewRedisStore(rdb, opts...)", "NewRedisStore(rdb)"), "\n")
	if want := readmeGo(t, "docs/clients.md", "A worker calling a\npartner API"); !slices.Equal(got, want) {
		t.Fatalf("README's partner API code and readmePartner differ, the store's options aside:\nREADME:\n%s\nreadmePartner:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	const instances, calls = 3, 40
	clock := newSchedClock(instances)
	p := &partner{clock: clock, limit: 20}
	srv := httptest.NewServer(p)
	defer srv.Close()
	call := func(ctx context.Context, req *http.Request) error {
		resp, err := srv.Client().Do(req.WithContext(ctx))
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	rdb, prefix := redistest.Standalone(t), redistest.Prefix(t)
	errs := make(chan error, instances)
	for range instances {
		requests := make([]*http.Request, calls)
		for i := range requests {
			requests[i] = httptest.NewRequest(http.MethodGet, srv.URL, nil)
			requests[i].RequestURI = ""
		}
		go func() {
			defer clock.done()
			errs <- readmePartner(context.Background(), rdb, requests, call, ratelimit.WithClock(clock), ratelimit.WithPrefix(prefix))
		}()
	}
	clock.run()
	for range instances {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if len(p.refused) > 0 {
		t.Fatalf("the partner refused %d of %d calls; the first: %s", len(p.refused), instances*calls, strings.Join(p.refused[:min(3, len(p.refused))], "; "))
	}
	if len(p.admitted) != instances*calls {
		t.Fatalf("the partner saw %d calls; want %d", len(p.admitted), instances*calls)
	}
	if last := p.admitted[len(p.admitted)-1].Sub(t0); last < 5*time.Second || last > 6*time.Second {
		t.Errorf("the last call at +%v; want 120 calls at 20 a second to end within the sixth second", last)
	}
}
