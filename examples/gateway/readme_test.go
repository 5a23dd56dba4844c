package main

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/examples/internal/exampletest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// readme is this example's README.
const readme = "README.md"

// The commands of README that ask a running gateway, each a marker of its sh block and one of
// the output block README shows after it.
var readmeCommands = []struct{ name, command, output string }{
	{"orders", "ask the orders service through the gateway:", "localhost:8080/orders/42\n```\n"},
	{"stream", "one a second:", "'localhost:8080/search/stream?q=go'\n```\n"},
	{"errors", "leave the quota whole:", "| grep -i remaining\n```\n"},
	{"anonymous", "the eleventh request within a minute is refused:", "| uniq -c\n```\n"},
}

// README's blocks are each read by a test here: the run command, each command above and its
// output, the two gateways over Redis, and the test command.
func TestReadmeBlocksAreRead(t *testing.T) {
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Count(string(data), "```")/2, 1+2*len(readmeCommands)+2; got != want {
		t.Errorf("%s has %d fenced blocks; its tests read %d: test the new one", readme, got, want)
	}
	if got, want := strings.TrimSpace(readmetest.Block(t, readme, "## Tests", "sh")), "cd examples && go test -race ./gateway/..."; got != want {
		t.Errorf("README's test command %q; want %q", got, want)
	}
}

// README's run command runs this package from examples/; each of its commands, run against
// a gateway started as README starts it, prints what README shows after it (but the date and
// the reset time, which are the run's own).
func TestReadmeCommands(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if run, want := strings.TrimSpace(readmetest.Block(t, readme, "so there is nothing to", "sh")), "cd "+filepath.Base(filepath.Dir(wd))+" && go run ./"+filepath.Base(wd); run != want {
		t.Errorf("README runs %q; this example is %q", run, want)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not in PATH")
	}
	bin := exampletest.Build(t)
	reset := regexp.MustCompile(`^X-Ratelimit-Reset: \d{10}$`)
	for _, c := range readmeCommands {
		t.Run(c.name, func(t *testing.T) {
			inst := exampletest.StartArgs(t, bin, []string{"-rules", "gateway.yaml"}) // the test runs in gateway/
			u, err := url.Parse(inst.URL)
			if err != nil {
				t.Fatal(err)
			}
			command := readmetest.Block(t, readme, c.command, "sh")
			if !strings.Contains(command, "localhost:8080/") {
				t.Fatalf("README's command %q does not ask localhost:8080", command)
			}
			out, err := exec.Command("sh", "-c", strings.ReplaceAll(command, "localhost:8080", u.Host)).CombinedOutput()
			if err != nil {
				t.Fatalf("README's command: %v\n%s", err, out)
			}
			got := strings.Split(strings.TrimRight(strings.ReplaceAll(string(out), "\r", ""), "\n"), "\n")
			want := strings.Split(strings.TrimRight(readmetest.Block(t, readme, c.output, ""), "\n"), "\n")
			if len(got) != len(want) {
				t.Fatalf("README's command printed\n%s\nREADME shows\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for i, w := range want {
				switch g := got[i]; {
				case strings.HasPrefix(w, "Date: "):
					if !strings.HasPrefix(g, "Date: ") {
						t.Errorf("line %d: %q; README shows %q, a date", i+1, g, w)
					}
				case reset.MatchString(w):
					if !reset.MatchString(g) {
						t.Errorf("line %d: %q; README shows %q, a Unix time", i+1, g, w)
					}
				case g != w:
					t.Errorf("line %d: %q; README shows %q", i+1, g, w)
				}
			}
		})
	}
}

// README's two gateways over one Redis, started with its flags (each on a free port of its
// own), use the Redis store; TestRedisFlagSharesTheQuota shows the quota is one.
func TestReadmeRedis(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(readmetest.Block(t, readme, "run one gateway per terminal:", "sh")), "\n")
	if len(lines) != 2 {
		t.Fatalf("README starts %d gateways; want 2", len(lines))
	}
	bin := exampletest.Build(t)
	var addrs []string
	for _, line := range lines {
		cmd, _, _ := strings.Cut(line, "#")
		fields := strings.Fields(cmd)
		if len(fields) < 3 || strings.Join(fields[:3], " ") != "go run ./gateway" {
			t.Fatalf("README's line %q does not run ./gateway", line)
		}
		args := []string{"-rules", "gateway.yaml"}
		addr := ":8080" // the default
		for i := 3; i < len(fields); i += 2 {
			if i+1 == len(fields) {
				t.Fatalf("README's line %q: flag %s has no value", line, fields[i])
			}
			switch flag, v := fields[i], fields[i+1]; flag {
			case "-addr": // the test's gateways listen on free ports
				addr = v
			case "-redis":
				ru, err := url.Parse(v)
				if err != nil || ru.Host != "localhost:6379" {
					t.Fatalf("README's -redis %q: %v", v, err)
				}
				ru.Host = redistest.Addr(t)
				args = append(args, flag, ru.String())
			default:
				args = append(args, flag, v)
			}
		}
		addrs = append(addrs, addr)
		inst := exampletest.StartArgs(t, bin, args, "RATELIMIT_PREFIX="+redistest.Prefix(t))
		if !strings.Contains(inst.Log(), "using the Redis store") {
			t.Errorf("README's line %q: the gateway does not use Redis:\n%s", line, inst.Log())
		}
	}
	if addrs[0] == addrs[1] {
		t.Errorf("README's two gateways both listen on %s", addrs[0])
	}
}
