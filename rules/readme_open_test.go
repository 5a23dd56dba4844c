package rules_test

import (
	"context"
	"log"
	nethttp "net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// server stands for package net/http in readmeOpen: README's http.ListenAndServe line runs as
// written and hands the test its address and handler.
type server struct {
	ListenAndServe func(addr string, handler nethttp.Handler) error
}

// readmeOpen is README's code of "A rules file, reloaded while you run", as written, over the
// store, tier function, context and mux it names, with http the test's server.
func readmeOpen(ctx context.Context, store ratelimit.Store, planOf func(ratelimit.Request) string, mux nethttp.Handler, http server) {
	engine, err := rules.Open(store, "limits.yaml", rules.WithTier(planOf))
	if err != nil {
		log.Fatal(err) // every error of the file, each with its line and field
	}
	go engine.WatchFile(ctx, "limits.yaml")                                // or: go engine.WatchRedis(ctx, client, rules.DefaultRedisKey)
	http.ListenAndServe(":8080", ratelimit.FromGuard(engine.Guard())(mux)) // ginlimit.FromGuard(engine.Guard()), ...
}

// waitFor waits for cond, failing the test if it does not hold within a generous bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after a minute", what)
		}
	}
}

// README's rules code, as written, in a directory holding README's limits.yaml: the server on
// :8080 limits a free API key to 100 a minute, and a new version written to the file is
// applied by WatchFile (the test waits for it, whether fsnotify or the 5 s reading brings it).
func TestReadmeOpen(t *testing.T) {
	readmetest.Same(t, "rules code", readmetest.FuncBody(t, "readme_open_test.go", "readmeOpen"),
		readmetest.Code(readmetest.Containing(t, "../docs/rules.md", `rules.Open(store, "limits.yaml", rules.WithTier(planOf))`, "go")))

	doc := readmetest.Block(t, "../docs/rules.md", "reads the limits from a YAML or JSON file", "yaml")
	t.Chdir(t.TempDir())
	if err := os.WriteFile("limits.yaml", []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var addr string
	var handler nethttp.Handler
	listen := server{ListenAndServe: func(a string, h nethttp.Handler) error { addr, handler = a, h; return nil }}
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0)))
	planOf := func(r ratelimit.Request) string { return r.Header("X-Plan") }
	mux := nethttp.NewServeMux()
	mux.HandleFunc("GET /items", func(nethttp.ResponseWriter, *nethttp.Request) {})
	readmeOpen(ctx, store, planOf, mux, listen)
	if addr != ":8080" || handler == nil {
		t.Fatalf("ListenAndServe(%q, %v); want :8080 and the engine's guard around the mux", addr, handler)
	}
	keys := 0
	limit := func() string { // the limit of a free API key no request used yet
		keys++
		r := httptest.NewRequest("GET", "/items", nil)
		r.Header.Set("X-API-Key", "k"+strconv.Itoa(keys))
		r.Header.Set("X-Plan", "free")
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		if w.Code != nethttp.StatusOK {
			t.Fatalf("a free API key's first request: %d; want 200", w.Code)
		}
		return w.Header().Get("X-RateLimit-Limit")
	}
	if got := limit(); got != "100" {
		t.Fatalf("a free API key's limit: %q; want 100 (per-minute)", got)
	}
	next := strings.Replace(strings.Replace(doc, `version: "2026-11-23.1"`, `version: "2026-11-23.2"`, 1), "limit: 100,", "limit: 60,", 1)
	if next == doc || !strings.Contains(next, "limit: 60,") {
		t.Fatal("README's rules file changed: the test cannot write its next version")
	}
	tmp := filepath.Join(filepath.Dir("limits.yaml"), ".limits.yaml.new") // written whole, renamed over it, as editors and Kubernetes do
	if err := os.WriteFile(tmp, []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, "limits.yaml"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new version applied", func() bool { return limit() == "60" })
}

// readmeOpenRedis is README's code of "Starting without Redis", as written, over the context,
// store, client and default rules it names, but for the last known good file's path, which
// is the test's own (lastKnownGood).
func readmeOpenRedis(ctx context.Context, store ratelimit.Store, rdb redis.UniversalClient, defaultLimits []byte, lastKnownGood string) *rules.Engine {
	engine, err := rules.OpenRedis(ctx, store, rdb, rules.DefaultRedisKey,
		rules.WithLastKnownGood(lastKnownGood),               // written on each version applied
		rules.WithDefaultRules("limits.yaml", defaultLimits)) // go:embed, for a first start
	if err != nil {
		log.Fatal(err) // neither Redis nor the last known good nor the default rules
	}
	go engine.WatchRedis(ctx, rdb, rules.DefaultRedisKey)
	return engine // README: the caller uses it
}

// README's code of "Starting without Redis", as written: with Redis empty, the application
// starts on its default rules, and WatchRedis applies the fleet's rules once pushed, writing
// them to the last known good file; another instance then starting while Redis does not
// answer starts on that file.
func TestReadmeOpenRedis(t *testing.T) {
	readmetest.Same(t, "OpenRedis code", readmetest.FuncBody(t, "readme_open_test.go", "readmeOpenRedis"),
		readmetest.Gofmt(t, strings.Split(strings.ReplaceAll(strings.Join(
			readmetest.Code(readmetest.Containing(t, "../docs/rules.md", "rules.OpenRedis(ctx, store, rdb, rules.DefaultRedisKey,", "go")), "\n"),
			`"/var/lib/myapp/limits.yaml"`, "lastKnownGood"), "\n")))

	rdb := redistest.Standalone(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clean := func() { rdb.Del(context.Background(), rules.DefaultRedisKey, rules.FleetKey(rules.DefaultRedisKey)) }
	clean()
	t.Cleanup(clean)
	lastKnownGood := filepath.Join(t.TempDir(), "limits.yaml")
	defaultLimits := []byte("version: \"default\"\nrules:\n  - name: all\n    key: ip\n    policies:\n      - {limit: 10, window: 1m}\n")
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0)))
	engine := readmeOpenRedis(ctx, store, rdb, defaultLimits, lastKnownGood)
	if v := engine.Version(); v != "default" {
		t.Fatalf("started with Redis empty on version %q; want the default rules", v)
	}
	fleet := []byte("version: \"2\"\nrules:\n  - name: all\n    key: ip\n    policies:\n      - {limit: 20, window: 1m}\n")
	if _, err := rules.Push(ctx, rdb, rules.DefaultRedisKey, "limits.yaml", fleet); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pushed rules applied", func() bool { return engine.Version() == "2" })
	waitFor(t, "the last known good file written", func() bool {
		b, _ := os.ReadFile(lastKnownGood)
		return string(b) == string(fleet)
	})

	// Another instance, Redis not answering: an address nothing listens on.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	otherCtx, stop := context.WithCancel(context.Background())
	t.Cleanup(func() {
		stop()
		down.Close()
	})
	other := readmeOpenRedis(otherCtx, ratelimit.NewMemoryStore(), down, defaultLimits, lastKnownGood)
	if v := other.Version(); v != "2" {
		t.Errorf("started with Redis down on version %q; want the last known good, 2", v)
	}
}

// docOpen is the code of the package documentation (doc.go) that opens a rules file, as
// written, over the store, tier function, context and mux it names.
func docOpen(ctx context.Context, store ratelimit.Store, planOf func(ratelimit.Request) string, mux nethttp.Handler) (nethttp.Handler, error) {
	e, err := rules.Open(store, "limits.yaml", rules.WithTier(planOf))
	if err != nil {
		return nil, err // every error of the file, each with its line and field
	}
	go e.WatchFile(ctx, "limits.yaml")
	handler := ratelimit.FromGuard(e.Guard())(mux)
	return handler, nil // README: what the caller serves
}

// The package documentation's code, as written: an invalid file is the error, naming its line
// and field; a valid one is applied, and its next version too.
func TestDocOpen(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, code, _ := strings.Cut(string(doc), "(ratelimit.FromGuard) and every adapter (FromGuard):\n//\n")
	code, _, _ = strings.Cut(code, "\n//\n")
	var want []string
	for _, line := range strings.Split(code, "\n") {
		want = append(want, strings.TrimPrefix(line, "//\t"))
	}
	readmetest.Same(t, "package documentation's code (doc.go)", readmetest.FuncBody(t, "readme_open_test.go", "docOpen"), want)

	t.Chdir(t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	store := ratelimit.NewMemoryStore(ratelimit.WithClock(fakeclock.New(fakeclock.T0)))
	planOf := func(ratelimit.Request) string { return "" }
	mux := nethttp.HandlerFunc(func(nethttp.ResponseWriter, *nethttp.Request) {})
	file := func(version, limit string) []byte {
		return []byte("version: \"" + version + "\"\nrules:\n  - name: all\n    key: ip\n    policies:\n      - {limit: " + limit + ", window: 1m}\n")
	}
	if err := os.WriteFile("limits.yaml", file("1", "1x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := docOpen(ctx, store, planOf, mux); err == nil || !strings.Contains(err.Error(), "limits.yaml:6: rules[0].policies[0].limit") {
		t.Fatalf("an invalid file: %v; want the error at limits.yaml:6, rules[0].policies[0].limit", err)
	}
	if err := os.WriteFile("limits.yaml", file("1", "10"), 0o600); err != nil {
		t.Fatal(err)
	}
	handler, err := docOpen(ctx, store, planOf, mux)
	if err != nil {
		t.Fatal(err)
	}
	ip := 0
	limit := func() string { // the limit of an address no request came from yet
		ip++
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = netip.AddrFrom4([4]byte{10, byte(ip >> 16), byte(ip >> 8), byte(ip)}).String() + ":1000"
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w.Header().Get("X-RateLimit-Limit")
	}
	if got := limit(); got != "10" {
		t.Fatalf("the limit: %q; want 10", got)
	}
	if err := os.WriteFile("limits.yaml", file("2", "20"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new version applied", func() bool { return limit() == "20" })
}
