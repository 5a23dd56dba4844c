package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/examples/internal/exampletest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// readme is the README whose quick start runs this example.
const readme = "../../README.md"

// README's quick start, as written: its command runs this package from examples/; its curl
// loop, run against the example with the memory store, prints what README shows (the first
// response and the sixth, refused; the reset time is the run's own, and Retry-After at most
// README's); and its two instances over one Redis, started with README's variables, draw on
// one quota.
func TestReadmeQuickStart(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	thisPackage := "./" + filepath.Base(wd)
	if run, want := strings.TrimSpace(readmetest.Block(t, readme, "Run the example server from a clone of this repository.", "sh")), "cd "+filepath.Base(filepath.Dir(wd))+" && go run "+thisPackage; run != want {
		t.Errorf("README's quick start runs %q; this example is %q", run, want)
	}

	t.Run("curl", func(t *testing.T) {
		if _, err := exec.LookPath("curl"); err != nil {
			t.Skip("curl is not in PATH")
		}
		inst := exampletest.Start(t, exampletest.Build(t))
		u, err := url.Parse(inst.URL)
		if err != nil {
			t.Fatal(err)
		}
		loop := strings.TrimSpace(readmetest.Block(t, readme, "and the sixth is refused:", "sh"))
		if !strings.Contains(loop, "localhost:8080/") {
			t.Fatalf("README's loop %q does not ask localhost:8080", loop)
		}
		out, err := exec.Command("sh", "-c", strings.ReplaceAll(loop, "localhost:8080", u.Host)).CombinedOutput()
		if err != nil {
			t.Fatalf("README's loop: %v\n%s", err, out)
		}
		var responses [][]string
		for line := range strings.SplitSeq(strings.ReplaceAll(strings.TrimSpace(string(out)), "\r", ""), "\n") {
			if strings.HasPrefix(line, "HTTP/") {
				responses = append(responses, nil)
			}
			if len(responses) > 0 {
				responses[len(responses)-1] = append(responses[len(responses)-1], line)
			}
		}
		first, last, ok := strings.Cut(strings.TrimSpace(readmetest.Block(t, readme, "grep -iE '^(HTTP|x-ratelimit|retry)'; done\n```\n", "")), "\n...\n")
		if !ok {
			t.Fatal("README's output has no ... between the first response and the last")
		}
		if len(responses) != 6 {
			t.Fatalf("README's loop printed %d responses; want 6:\n%s", len(responses), out)
		}
		same := func(what string, got []string, want string) {
			t.Helper()
			wantLines := strings.Split(want, "\n")
			if len(got) != len(wantLines) {
				t.Errorf("%s: %q; README shows %q", what, got, wantLines)
				return
			}
			for i, w := range wantLines {
				g := got[i]
				name, wv, _ := strings.Cut(w, ": ")
				_, gv, _ := strings.Cut(g, ": ")
				switch name {
				case "X-Ratelimit-Reset": // a time of its own
					if !strings.HasPrefix(g, name+": ") || !regexp.MustCompile(`^\d{10}$`).MatchString(gv) {
						t.Errorf("%s: %q; README shows %q, a Unix time", what, g, w)
					}
				case "Retry-After": // at most README's: the window is 10 s
					n, err := strconv.Atoi(gv)
					max, _ := strconv.Atoi(wv)
					if !strings.HasPrefix(g, name+": ") || err != nil || n < 1 || n > max {
						t.Errorf("%s: %q; README shows %q", what, g, w)
					}
				default:
					if g != w {
						t.Errorf("%s: %q; README shows %q", what, g, w)
					}
				}
			}
		}
		same("the first response", responses[0], first)
		same("the sixth response", responses[5], last)
		for i, r := range responses[1:5] {
			if r[0] != "HTTP/1.1 200 OK" {
				t.Errorf("response %d: %q; README says only the sixth is refused", i+2, r)
			}
		}
	})

	t.Run("redis", func(t *testing.T) {
		lines := strings.Split(strings.TrimSpace(readmetest.Block(t, readme, "instance needs its own address:", "sh")), "\n")
		if len(lines) != 2 {
			t.Fatalf("README starts %d instances; want 2", len(lines))
		}
		var urls, addrs []string
		prefix := redistest.Prefix(t) // the instances' one prefix, no other test's
		for _, line := range lines {
			cmd, _, _ := strings.Cut(line, "#")
			fields := strings.Fields(cmd)
			if len(fields) < 3 || strings.Join(fields[len(fields)-3:], " ") != "go run "+thisPackage {
				t.Fatalf("README's line %q does not run %s", line, thisPackage)
			}
			env := []string{"RATELIMIT_PREFIX=" + prefix}
			addr := ":8080" // the example's default
			for _, kv := range fields[:len(fields)-3] {
				k, v, ok := strings.Cut(kv, "=")
				switch {
				case !ok:
					t.Fatalf("README's line %q: %q is no variable", line, kv)
				case k == "ADDR": // the test's instances listen on free ports
					addr = v
				case k == "REDIS_URL":
					ru, err := url.Parse(v)
					if err != nil || ru.Host != "localhost:6379" {
						t.Fatalf("README's REDIS_URL %q: %v", v, err)
					}
					ru.Host = redistest.Addr(t)
					env = append(env, "REDIS_URL="+ru.String())
				default:
					env = append(env, kv)
				}
			}
			addrs = append(addrs, addr)
			inst := exampletest.Start(t, exampletest.Build(t), env...)
			if !strings.Contains(inst.Log(), "using the Redis store") {
				t.Fatalf("README's line %q: the instance does not use Redis:\n%s", line, inst.Log())
			}
			urls = append(urls, inst.URL)
		}
		if addrs[0] == addrs[1] {
			t.Errorf("README's two instances both listen on %s", addrs[0])
		}
		for i := range burst {
			if resp := exampletest.Do(t, http.MethodGet, urls[0]+"/"); resp.StatusCode != http.StatusOK {
				t.Fatalf("request %d to the first instance: %d; want 200", i+1, resp.StatusCode)
			}
		}
		if resp := exampletest.Do(t, http.MethodGet, urls[1]+"/"); resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("the sixth request, to the second instance: %d; want 429, the quota being one (%s)", resp.StatusCode, fmt.Sprint(resp.Header))
		}
	})
}
