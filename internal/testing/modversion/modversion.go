// Package modversion holds what the adapters' tests share to prove which framework version they
// ran on: the version the go command selected for the test's build, beside the version the
// module file in use requires. An adapter claims to be tested on the oldest release it supports
// (its go.mod) and on the newest one (its go.newest.mod, used with GOFLAGS=-modfile=go.newest.mod);
// a workspace that raises a framework's version for every module in it (one module requiring a
// newer Gin) would otherwise move the adapter's tests off the version they claim, silently.
package modversion

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Check fails t unless each module of paths runs at the version that the test's module file
// requires of it. The module file is go.mod in the working directory (a package's test runs in
// its directory, the module's root for the adapters), or the one GOFLAGS names with -modfile.
// The version that runs is what `go list -m` reports in the test's environment (GOWORK and
// GOFLAGS included), the selection the go command made when it built the test. Check logs
// both, so that `go test -v` shows which version each adapter ran on.
func Check(t testing.TB, paths ...string) {
	t.Helper()
	file := modFile()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("modversion: %v", err)
	}
	for _, path := range paths {
		want, err := required(data, path)
		if err != nil {
			t.Fatalf("modversion: %s: %v", file, err)
		}
		got, err := selected(path)
		if err != nil {
			t.Fatalf("modversion: %v", err)
		}
		if got != want {
			t.Errorf("%s runs at %s, but %s requires %s: something in the build (a workspace's other module?) raised it, so these tests do not run on the version the module claims", path, got, file, want)
			continue
		}
		t.Logf("%s %s (%s)", path, got, file)
	}
}

// modFile names the module file the go command was told to use.
func modFile() string {
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if v, ok := strings.CutPrefix(f, "-modfile="); ok {
			return v
		}
	}
	return "go.mod"
}

// required returns the version the module file requires of path (in a require block or on a
// require line of its own).
func required(modfile []byte, path string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(modfile))
	for sc.Scan() {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(f) >= 2 && f[0] == path {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("no requirement of %s", path)
}

// selected returns the version of path that the go command selects in this environment.
func selected(path string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", path).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("go list -m %s: %v: %s", path, err, exit.Stderr)
		}
		return "", fmt.Errorf("go list -m %s: %v", path, err)
	}
	return strings.TrimSpace(string(out)), nil
}
