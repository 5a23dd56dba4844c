package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/algorithms"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// readmeMiddlewareApp is the application of README's paragraph on a middleware's limits, as
// written, over the client and mux it names.
func readmeMiddlewareApp(client redis.UniversalClient, mux http.Handler) http.Handler {
	l, _ := ratelimit.New(ratelimit.NewRedisStore(client, ratelimit.WithPrefix("api:")),
		ratelimit.Policy{Name: "burst", Limit: 10, Window: time.Second},
		ratelimit.Policy{Limit: 1000, Window: time.Hour, Algorithm: algorithms.SlidingCounter{}})
	handler := ratelimit.Middleware(l, ratelimit.WithKey(ratelimit.KeyByHeader("X-API-Key")))(mux)
	return handler // README: what the caller serves
}

// TestReadmeMiddlewareInspect runs README's application with a middleware's limits, as
// written, and then its inspect line, as written but for the Redis address ($REDIS_URL): the
// command finds what one request of API key abc used under both policies (the unnamed one
// named as New names it), at the keys the application wrote.
func TestReadmeMiddlewareInspect(t *testing.T) {
	const marker = "A middleware's limits have no rule"
	source, err := os.ReadFile("readme_middleware_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(source), "mux http.Handler) http.Handler {\n")
	body, _, _ = strings.Cut(body, "\n\treturn handler")
	var got []string
	for _, line := range strings.Split(body, "\n") {
		got = append(got, strings.TrimPrefix(line, "\t"))
	}
	if want := strings.Split(strings.TrimSpace(readmetest.Block(t, "../../docs/cli.md", marker, "go")), "\n"); !slices.Equal(got, want) {
		t.Fatalf("README's application and readmeMiddlewareApp differ:\nREADME:\n%s\nreadmeMiddlewareApp:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}

	client := redistest.Standalone(t)
	// README's prefix, api:, is no other test's: its keys are cleared before and after.
	clear := func() {
		if keys, err := client.Keys(context.Background(), "api:*").Result(); err == nil && len(keys) > 0 {
			client.Del(context.Background(), keys...)
		}
	}
	clear()
	t.Cleanup(clear)
	h := readmeMiddlewareApp(client, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-API-Key", "abc")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("a request of API key abc: %d; want 200", w.Code)
	}

	line := strings.ReplaceAll(strings.TrimSpace(readmetest.Block(t, "../../docs/cli.md", marker, "sh")), "\\\n", " ")
	args := words(strings.ReplaceAll(line, `"$REDIS_URL"`, redistest.Addr(t)))
	if len(args) < 2 || args[0] != "ratelimit" || args[1] != "inspect" {
		t.Fatalf("README's line %q is not a ratelimit inspect", line)
	}
	res := cli(t, args[1:]...)
	res.want(t, 0, "identity  hdr:x-api-key:abc\n", "")
	row(t, res.stdout, "sliding-window-counter-1000-per-1h", "1000 per 1h", "999", "allowed")
	for _, p := range []ratelimit.Policy{{Name: "burst", Limit: 10, Window: time.Second},
		{Limit: 1000, Window: time.Hour, Algorithm: algorithms.SlidingCounter{}}} {
		if key := ratelimit.StorageKey("api:", "hdr:x-api-key:abc", p, false); !strings.Contains(res.stdout, key) {
			t.Errorf("inspect does not name the key %s the application wrote:\n%s", key, res.stdout)
		}
	}
}
