package ratelimit_test

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
)

// README's Install, until v0.1.0 is published: a module of a user's, beside a clone of this
// repository (here a link to it), points at the clone with README's go mod edit lines, and
// then README's go get line of the core resolves, as written, and the program builds outside
// the workspace, and so does the rules module's; the command installs from the clone as README
// says. Offline: the core's and rules' dependencies come from the module cache. (The adapter's
// replace line is run too; getting the adapter would need its framework's whole module graph,
// which the cache need not hold.)
func TestReadmeInstallFromAClone(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(root, filepath.Join(dir, "ratelimit")); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, "app")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	main := "package main\n\nimport \"github.com/a7d3e0dd/ratelimit\"\n\nfunc main() { _ = ratelimit.NewMemoryStore() }\n"
	if err := os.WriteFile(filepath.Join(app, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off")
	run := func(dir string, env []string, line string) {
		t.Helper()
		args := strings.Fields(line)
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s (in %s): %v\n%s", line, dir, err, out)
		}
	}
	run(app, outside, "go mod init example.com/app")
	for line := range strings.SplitSeq(readmetest.Block(t, "README.md", "With the clone beside your module, in `../ratelimit`, for the core, Gin and rules:", "sh"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			run(app, outside, line)
		}
	}
	get := strings.TrimSpace(readmetest.Block(t, "README.md", "Install the command from the clone:", "sh"))
	if get != "go get github.com/a7d3e0dd/ratelimit@v0.1.0" {
		t.Fatalf("README's first go get line is %q", get)
	}
	run(app, outside, get)
	run(app, outside, "go build -o "+filepath.Join(dir, "app.bin")+" .")
	// The rules module is one of the clone's too: README's go get line of it, as written, once
	// README's replace of it has run (without one, go looks for the rules package in the core's
	// module, and says the clone "does not contain package .../rules").
	rulesGet := strings.TrimSpace(readmetest.Block(t, "README.md", "the module `github.com/a7d3e0dd/ratelimit/rules`:", "sh"))
	if rulesGet != "go get github.com/a7d3e0dd/ratelimit/rules@v0.1.0" {
		t.Fatalf("README's go get line of the rules module is %q", rulesGet)
	}
	run(app, outside, rulesGet)

	if testing.Short() {
		return // what follows builds the command
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("Install the command from the clone: `cd ../ratelimit && (go install ./cmd/ratelimit)`").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README does not say how to install the command from a clone")
	}
	bin := filepath.Join(dir, "bin")
	run(filepath.Join(dir, "ratelimit"), append(os.Environ(), "GOBIN="+bin, "GOFLAGS="), string(m[1]))
	if _, err := os.Stat(filepath.Join(bin, "ratelimit")); err != nil {
		t.Errorf("go install ./cmd/ratelimit in the clone installed no ratelimit: %v", err)
	}
}

// installRequirement is what an install line's comment names: a dependency's smallest
// version (the module's go.mod requires it), by the name README gives it.
var installRequirement = map[string]string{
	"Gin":                      "github.com/gin-gonic/gin",
	"Echo v4":                  "github.com/labstack/echo/v4",
	"Echo v5":                  "github.com/labstack/echo/v5",
	"Fiber v2":                 "github.com/gofiber/fiber/v2",
	"Fiber v3":                 "github.com/gofiber/fiber/v3",
	"gRPC":                     "google.golang.org/grpc",
	"client_golang":            "github.com/prometheus/client_golang",
	"OpenTelemetry metric API": "go.opentelemetry.io/otel/metric",
}

// README's install lines, as written: every one names a module of this repository at the
// core's version (or, for the command, @latest), each comment's "NAME ≥ vX" is a requirement
// of that module's go.mod, "(Go ≥ 1.25)" its go line and "package p" its package; the lines
// install every released module, as the release tool (tools/release) runs them; and no guide
// under docs/ has an install line of its own, which the release tool would not set.
func TestReadmeInstallLines(t *testing.T) {
	const core = "github.com/a7d3e0dd/ratelimit"
	var lines []string
	for _, b := range []struct{ doc, marker string }{
		{"README.md", "Install the command from the clone:"},
		{"README.md", "Each framework adapter is its own module, so a Gin user downloads neither Echo nor Fiber:"},
		{"README.md", "the module `github.com/a7d3e0dd/ratelimit/rules`:"},
		{"README.md", "The metrics ([docs/metrics.md](docs/metrics.md)) are two modules of their own"},
		{"README.md", "The operator command, `ratelimit`, is a module of its own too"},
	} {
		for line := range strings.SplitSeq(strings.TrimSpace(readmetest.Block(t, b.doc, b.marker, "sh")), "\n") {
			lines = append(lines, line)
		}
	}
	line := regexp.MustCompile(`^go (get|install) (` + regexp.QuoteMeta(core) + `(?:/[\w/]+)?)@(\S+)\s*(?:# (.*))?$`)
	installed := map[string]bool{}
	for _, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("README's install line %q is not go get (or install) of a module of %s", l, core)
			continue
		}
		verb, mod, version, comment := m[1], m[2], m[3], m[4]
		dir := strings.TrimPrefix(strings.TrimPrefix(mod, core), "/")
		if dir == "" {
			dir = "."
		}
		gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil || !regexp.MustCompile(`(?m)^module `+regexp.QuoteMeta(mod)+`$`).Match(gomod) {
			t.Errorf("README installs %s, which is no module of the repository (%s/go.mod: %v)", mod, dir, err)
			continue
		}
		installed[mod] = true
		if want := map[string]string{"get": "v0.1.0", "install": "latest"}[verb]; version != want {
			t.Errorf("README's line %q: @%s; want @%s, as the core's line has it", l, version, want)
		}
		if verb == "install" && !regexp.MustCompile(`(?m)^package main$`).Match(readFileOr(t, filepath.Join(dir, "main.go"))) {
			t.Errorf("README installs %s, which is no command", mod)
		}
		for _, part := range strings.Split(comment, ",") {
			part = strings.TrimSpace(part)
			switch req := regexp.MustCompile(`^(.+) ≥ (v\S+)(?: \(Go ≥ (\S+)\))?$`).FindStringSubmatch(part); {
			case part == "":
			case strings.HasPrefix(part, "package "):
				name := strings.TrimPrefix(part, "package ")
				if !regexp.MustCompile(`(?m)^package ` + regexp.QuoteMeta(name) + `$`).Match(readFileOr(t, filepath.Join(dir, "doc.go"))) {
					t.Errorf("README's line %q: %s/doc.go is not package %s", l, dir, name)
				}
			case req != nil:
				dep, ok := installRequirement[req[1]]
				if !ok {
					t.Errorf("README's line %q names %q, which this test does not know", l, req[1])
					continue
				}
				if !regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(dep) + ` ` + regexp.QuoteMeta(req[2]) + `\b`).Match(gomod) {
					t.Errorf("README's line %q: %s/go.mod does not require %s %s", l, dir, dep, req[2])
				}
				if req[3] != "" && !regexp.MustCompile(`(?m)^go `+regexp.QuoteMeta(req[3])+`\b`).Match(gomod) {
					t.Errorf("README's line %q: %s/go.mod's go line is not %s", l, dir, req[3])
				}
			default:
				t.Errorf("README's line %q: comment %q is neither a requirement nor a package", l, part)
			}
		}
	}
	// The release tool sets the version of README's install lines alone: a guide's would be
	// left behind at release, so the guides point at README's Install instead.
	for _, d := range guides(t)[1:] {
		if m := regexp.MustCompile(`(?m)^.*go (?:get|install) ` + regexp.QuoteMeta(core) + `\S*@v\S*`).FindString(rootFile(t, d)); m != "" {
			t.Errorf("%s has an install line, %q, which make release would not set: give it in README's Install", d, strings.TrimSpace(m))
		}
	}
	// Every released module (all but examples and the developer tools) has its line.
	for _, f := range repositoryFiles(t) {
		if path.Base(f) != "go.mod" || strings.HasPrefix(f, "examples") || strings.HasPrefix(f, "tools") {
			continue
		}
		mod := strings.TrimSuffix(core+"/"+path.Dir(f), "/.")
		if !installed[mod] {
			t.Errorf("README's Install has no line for the released module %s", mod)
		}
	}
}

// readFileOr returns a file's content, failing the test when it cannot be read.
func readFileOr(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
