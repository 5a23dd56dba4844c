package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/rules"
)

// words splits a command line as a shell does for the README's lines: at blanks, with
// 'single quotes' kept together.
func words(line string) []string {
	var out []string
	var w strings.Builder
	quoted, in := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, in = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if in {
				out = append(out, w.String())
				w.Reset()
			}
			in = false
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}

// TestReadmeCommands runs the command lines of README's section on the ratelimit command, as
// written but for the Redis address, against the README's rules file and an application
// wired as the README shows (rules.Open, WatchRedis, FromGuard of the engine's guard): each
// exits 0; validate prints what its comment says; --version the command's own version, help
// push push's help, version the rules'; push reaches the application; inspect shows
// what one request of API key abc on the search route used, and reset gives it back.
func TestReadmeCommands(t *testing.T) {
	client := redistest.Standalone(t)
	addr := redistest.Addr(t)
	// The lines use the default prefix and rules key, which no other test of this package does.
	clear := func() {
		for _, pattern := range []string{defaultPrefix + "*", rules.DefaultRedisKey + "*"} {
			keys, err := client.Keys(context.Background(), pattern).Result()
			if err == nil && len(keys) > 0 {
				client.Del(context.Background(), keys...)
			}
		}
	}
	clear()
	t.Cleanup(clear)
	limits, block := readmetest.Block(t, "../../docs/rules.md", "reads the limits from a YAML or JSON file", "yaml"), readmetest.Block(t, "../../docs/cli.md", "# The ratelimit command", "sh")
	t.Chdir(t.TempDir()) // the lines name limits.yaml
	if err := os.WriteFile("limits.yaml", []byte(limits), 0o600); err != nil {
		t.Fatal(err)
	}

	// The application, as README's section on rules files wires it.
	planOf := func(r ratelimit.Request) string { return r.Header("X-Plan") }
	engine, err := rules.Open(ratelimit.NewRedisStore(client), "limits.yaml", rules.WithTier(planOf))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); engine.WatchRedis(ctx, client, rules.DefaultRedisKey) }()
	t.Cleanup(func() { cancel(); <-done })
	mux := http.NewServeMux()
	mux.HandleFunc("GET /search/{q}", func(http.ResponseWriter, *http.Request) {})
	app := ratelimit.FromGuard(engine.Guard())(mux)
	until(t, "the application to report to the fleet", func() bool {
		f, _ := rules.Fleet(t.Context(), client, rules.DefaultRedisKey)
		return len(f) == 1
	})
	search := func() int {
		r := httptest.NewRequest("GET", "/search/shoes", nil)
		r.RemoteAddr = "192.0.2.1:1234"
		r.Header.Set("X-API-Key", "abc")
		r.Header.Set("X-Plan", "free")
		w := httptest.NewRecorder()
		app.ServeHTTP(w, r)
		return w.Code
	}

	searched, inspected, reset := false, 0, false
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		command, comment, _ := strings.Cut(line, "#")
		args := words(command)
		if len(args) < 2 || args[0] != "ratelimit" {
			t.Fatalf("README line %q is not a ratelimit command", line)
		}
		args = args[1:]
		for i := range args {
			if i > 0 && args[i-1] == "-redis" {
				args[i] = addr
			}
		}
		if (args[0] == "inspect" || args[0] == "reset") && !searched {
			if code := search(); code != http.StatusOK {
				t.Fatalf("a search of API key abc: %d, want 200", code)
			}
			searched = true
		}
		r := cli(t, args...)
		if r.code != 0 {
			t.Errorf("README line %q: exit %d\nstdout:\n%s\nstderr:\n%s", line, r.code, r.stdout, r.stderr)
			continue
		}
		switch {
		case args[0] == "validate" && strings.TrimSpace(r.stdout) != strings.TrimSpace(comment):
			t.Errorf("README line %q prints %q", line, strings.TrimSpace(r.stdout))
		case args[0] == "--version" && (!strings.HasPrefix(r.stdout, "ratelimit ") || !strings.Contains(r.stdout, "\nmodule     github.com/a7d3e0dd/ratelimit/cmd/ratelimit\n")):
			t.Errorf("README line %q prints %q; want the command's own version", line, r.stdout)
		case args[0] == "help" && !strings.HasPrefix(r.stdout, "usage: ratelimit "+args[1]+" "):
			t.Errorf("README line %q prints %q; want the help of %s", line, r.stdout, args[1])
		case args[0] == "version" && !strings.HasPrefix(r.stdout, "the rules stored in Redis"):
			t.Errorf("README line %q prints %q; want the rules stored in Redis", line, r.stdout)
		case args[0] == "push" && !slices.Contains(args, "-dry-run") && !strings.Contains(r.stdout, "applied on 1 of 1 instances"):
			t.Errorf("README line %q: the application did not apply the push:\n%s", line, r.stdout)
		case args[0] == "inspect" && slices.Contains(args, "search-free"):
			inspected++
			row(t, r.stdout, "search", "50 per 1m", "45", "allowed") // one search of cost 5
		case args[0] == "inspect" && slices.Contains(args, "free"):
			// The identity shown is the one the rule's key makes of the API key.
			flags := cli(t, "inspect", "-redis", addr, "-rule", "free", "-api-key", "abc")
			id := regexp.MustCompile(`(?m)^identity\s+(\S+)$`)
			if got, want := id.FindStringSubmatch(r.stdout), id.FindStringSubmatch(flags.stdout); got == nil || want == nil || got[1] != want[1] {
				t.Errorf("README line %q inspects %q; the rule keys API key abc as %q", line, got, want)
			}
		case args[0] == "reset":
			reset = true
			after := cli(t, "inspect", "-redis", addr, "-rule", "search-free", "-api-key", "abc", "-route", "/search/{q}")
			row(t, after.stdout, "search", "50 per 1m", "50", "allowed")
		}
	}
	if inspected != 1 || !reset {
		t.Errorf("README's lines inspected the search of API key abc %d times and reset it: %v; want once, and true", inspected, reset)
	}
}
