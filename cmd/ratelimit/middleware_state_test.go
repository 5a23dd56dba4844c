package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/redistest"
)

// inspect and reset work for a middleware's limits, with no rules file: the policies given
// on the command line as the application has them find the state the middleware keeps.
func TestInspectResetMiddleware(t *testing.T) {
	client := redistest.Standalone(t)
	addr, prefix := redistest.Addr(t), redistest.Prefix(t)
	store := ratelimit.NewRedisStore(client, ratelimit.WithPrefix(prefix))
	l, err := ratelimit.New(store,
		ratelimit.Policy{Name: "burst", Limit: 3, Window: time.Minute, Algorithm: algorithms.SlidingLog{}},
		ratelimit.Policy{Limit: 100, Window: time.Hour}) // unnamed: GCRA, named as New names it
	if err != nil {
		t.Fatal(err)
	}
	h := ratelimit.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	send := func() int {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "203.0.113.7:1234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for range 3 {
		send()
	}
	if code := send(); code != http.StatusTooManyRequests {
		t.Fatalf("the 4th request in a minute: %d, want 429", code)
	}
	flags := []string{"-redis", addr, "-prefix", prefix, "-ip", "203.0.113.7",
		"-policy", "name=burst,limit=3,window=1m,algorithm=sliding_window_log", "-policy", "limit=100,window=1h"}
	r := cli(t, append([]string{"inspect"}, flags...)...)
	r.want(t, 0, "rule      middleware (the command line's -policy)", "")
	row(t, r.stdout, "burst", "3 per 1m", "0", "denied")
	cli(t, append([]string{"reset"}, flags...)...).want(t, 0, "", "")
	if code := send(); code != http.StatusOK {
		t.Errorf("after reset, the middleware answered %d; want 200", code)
	}
	cli(t, "inspect", "-redis", addr, "-policy", "limit=x", "1.2.3.4").want(t, 2, "", `limit "x" is not a whole number`)
}
