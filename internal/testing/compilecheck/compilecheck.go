// Package compilecheck builds Go snippets against this repository's modules, as a user's
// program would use them, to test what must not compile: an option given to a constructor it
// does not fit is a type error, not a run-time one.
package compilecheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Case is one program: the body of its main function and what it imports.
type Case struct {
	Name    string   // a short name, also the package's directory: lower-case letters and digits
	Imports []string // the packages the body uses
	Body    string   // the body of main
}

// Build builds every case as a package of one module that requires modules of the repository
// from this checkout (by directory: "." for the core, "rules"), and returns the compiler's
// output for each case that did not build, by name; a case that built is absent.
func Build(t testing.TB, modules []string, cases []Case) map[string]string {
	t.Helper()
	root := repoRoot(t)
	dir := t.TempDir()
	var mod strings.Builder
	mod.WriteString("module probe\n\ngo 1.24\n")
	for _, m := range modules {
		path := "github.com/a7d3e0dd/ratelimit"
		if m != "." {
			path += "/" + m
		}
		fmt.Fprintf(&mod, "\nrequire %s v0.0.0\n\nreplace %s => %s\n", path, path, filepath.Join(root, m))
	}
	write(t, filepath.Join(dir, "go.mod"), mod.String())
	var sums []byte
	for _, m := range modules {
		b, err := os.ReadFile(filepath.Join(root, m, "go.sum"))
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, b...)
	}
	write(t, filepath.Join(dir, "go.sum"), string(sums))
	for _, c := range cases {
		var src strings.Builder
		src.WriteString("package main\n\nimport (\n")
		for _, imp := range c.Imports {
			fmt.Fprintf(&src, "\t%q\n", imp)
		}
		fmt.Fprintf(&src, ")\n\nfunc main() {\n%s\n}\n", c.Body)
		write(t, filepath.Join(dir, c.Name, "main.go"), src.String())
	}
	cmd := exec.Command("go", "build", "-o", os.DevNull, "./...")
	cmd.Dir = dir
	// Outside the workspace, as a user builds. The modules' sums are the repository's; what
	// the module cache lacks comes from GOPROXY, unverified (nothing of it runs).
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOSUMDB=off")
	out, _ := cmd.CombinedOutput()
	failed := map[string]string{}
	name := ""
	for line := range strings.Lines(string(out)) {
		if pkg, ok := strings.CutPrefix(line, "# probe/"); ok {
			name = strings.TrimSpace(pkg)
			continue
		}
		if name != "" {
			failed[name] += line
		} else if strings.TrimSpace(line) != "" && !slices.ContainsFunc(cases, func(c Case) bool { return strings.Contains(line, c.Name+"/") }) {
			t.Fatalf("go build: %s", out) // not a compile error of a case: the probe is broken
		}
	}
	for line := range strings.Lines(string(out)) { // errors of a case without a header line
		for _, c := range cases {
			if strings.HasPrefix(line, c.Name+"/") || strings.HasPrefix(line, "./"+c.Name+"/") {
				failed[c.Name] += line
			}
		}
	}
	return failed
}

func write(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// repoRoot returns the directory of the core module: three above this file's.
func repoRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("compilecheck: cannot find the repository")
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(file))))
}
