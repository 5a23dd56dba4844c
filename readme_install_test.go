package ratelimit_test

import (
	"os"
	"os/exec"
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
