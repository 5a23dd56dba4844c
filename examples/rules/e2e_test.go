package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/examples/internal/exampletest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

func TestMain(m *testing.M) { os.Exit(exampletest.Main(m)) }

// The RateLimit-Policy header of the pro plan, before and after the edit.
const (
	proV1 = `"per-second";q=20;w=1, "per-minute";q=2000;w=60`
	proV2 = `"per-second";q=40;w=1, "per-minute";q=3000;w=60`
)

// replaceFile writes data to path as editors do: a temporary file renamed over it.
func replaceFile(t *testing.T, path string, data string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds, failing the test when it does not in a long while: a
// change the example owes, not a deadline it must meet.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%s: not within 30 s", what)
		}
	}
}

// TestEditRulesUnderTraffic runs the example over Redis, edits its rules file while clients
// of the pro plan send requests, then breaks the file: the edit is applied without a restart,
// every response is answered under one version (the old or the new, never a mix), and the
// broken file is logged with its line while the last good rules stay.
func TestEditRulesUnderTraffic(t *testing.T) {
	original, err := os.ReadFile("limits.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "limits.yaml")
	replaceFile(t, path, string(original))
	inst := exampletest.Start(t, exampletest.Build(t), "RULES="+path,
		"REDIS_URL=redis://"+redistest.Addr(t)+"/0", "RATELIMIT_PREFIX="+redistest.Prefix(t))
	if !strings.Contains(inst.Log(), `msg="ratelimit rules applied" version=1 rules=4`) {
		t.Fatalf("the example does not log the version it applies:\n%s", inst.Log())
	}

	var (
		mu       sync.Mutex
		policies = map[string]int{} // RateLimit-Policy → responses
		statuses = map[int]int{}
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	seen := func(p string) bool { mu.Lock(); defer mu.Unlock(); return policies[p] > 0 }
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp := exampletest.Do(t, http.MethodGet, inst.URL+"/items/1", "X-API-Key", "key-pro-1")
				mu.Lock()
				policies[resp.Header.Get("RateLimit-Policy")]++
				statuses[resp.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	waitFor(t, "traffic under version 1", func() bool { return seen(proV1) })
	edited := strings.NewReplacer(`version: "1"`, `version: "2"`,
		"{name: per-second, limit: 20, window: 1s}", "{name: per-second, limit: 40, window: 1s}",
		"{name: per-minute, limit: 2000, window: 1m}", "{name: per-minute, limit: 3000, window: 1m}").Replace(string(original))
	replaceFile(t, path, edited)
	waitFor(t, "traffic under version 2", func() bool { return seen(proV2) })
	// The engine swaps the rules, then logs: a response under version 2 may come first.
	waitFor(t, "the edit's version logged", func() bool {
		return strings.Contains(inst.Log(), `msg="ratelimit rules applied" version=2 rules=4 source=`+path+" previous=1")
	})

	broken := strings.Replace(edited, `version: "2"`, `version: "3"`, 1)
	broken = strings.Replace(broken, "window: 1s}", "window: 1s, brust: 5}", 1) // line 16
	replaceFile(t, path, broken)
	waitFor(t, "the broken file logged", func() bool { return strings.Contains(inst.Log(), "rules rejected") })
	if want := path + `:16: rules[1].policies[0].brust: unknown field`; !strings.Contains(inst.Log(), want) {
		t.Errorf("the log does not name the broken line, %q:\n%s", want, inst.Log())
	}
	mu.Lock()
	before := policies[proV2]
	mu.Unlock()
	waitFor(t, "more traffic under version 2", func() bool { mu.Lock(); defer mu.Unlock(); return policies[proV2] > before+10 })
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	for p, n := range policies {
		if p != proV1 && p != proV2 {
			t.Errorf("%d responses with RateLimit-Policy %q, which is neither version's", n, p)
		}
	}
	if statuses[200] == 0 || statuses[200]+statuses[429] != policies[proV1]+policies[proV2] {
		t.Errorf("statuses %v, policies %v: want every response admitted or refused under one version", statuses, policies)
	}
	t.Logf("responses: %v; by version: v1 %d, v2 %d", statuses, policies[proV1], policies[proV2])
}
