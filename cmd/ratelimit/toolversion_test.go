package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// TestToolVersion: ratelimit --version and -version print the command's own version, exit 0;
// "ratelimit version", which reads the rules in Redis, says its version is the rules' (the
// user who typed --version got "unknown command", and "version" printed the rules' version
// without naming it).
func TestToolVersion(t *testing.T) {
	long, short := cli(t, "--version"), cli(t, "-version")
	long.want(t, 0, "ratelimit ", "")
	if short != long || !strings.HasPrefix(long.stdout, "ratelimit ") || long.stderr != "" {
		t.Errorf("--version: %+v, -version: %+v; want the same, the tool's version on stdout", long, short)
	}
	cli(t, "help").want(t, 0, "ratelimit --version", "")

	// The binary as a user builds it: what it prints is what go version -m reads in it.
	bin := filepath.Join(t.TempDir(), "ratelimit")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	goVersion := regexp.MustCompile(`^\S+: (\S+)`).FindSubmatch(info)
	mod := regexp.MustCompile(`(?m)^\tmod\t(\S+)\t(\S+)`).FindSubmatch(info)
	if goVersion == nil || mod == nil {
		t.Fatalf("go version -m: no Go version or mod line in:\n%s", info)
	}
	want := "ratelimit " + string(mod[2])
	if string(mod[2]) == "(devel)" {
		want += ", built from source, not a release"
	}
	want += "\nmodule     " + string(mod[1]) + "\n"
	if rev := regexp.MustCompile(`(?m)^\tbuild\tvcs\.revision=(\S+)`).FindSubmatch(info); rev != nil {
		want += "commit     " + string(rev[1])
		if strings.Contains(string(info), "\tbuild\tvcs.modified=true") {
			want += " (modified)"
		}
		want += "\n"
	}
	want += "go         " + string(goVersion[1]) + "\n"
	for _, flag := range []string{"--version", "-version"} {
		got, err := exec.Command(bin, flag).Output()
		if err != nil || string(got) != want {
			t.Errorf("ratelimit %s: %v, stdout:\n%s\nwant:\n%s", flag, err, got, want)
		}
	}

	// The rules' version, named as theirs.
	addr, key := redistest.Addr(t), redistest.Prefix(t)+"rules"
	file := write(t, "limits.yaml", stateYAML)[0]
	cli(t, "push", "-wait", "0", "-redis", addr, "-key", key, file).want(t, 0, "version s1", "")
	r := cli(t, "version", "-redis", addr, "-key", key)
	r.want(t, 0, "the rules stored in Redis (the tool's own version: ratelimit --version)\nversion    s1\n", "")
	if !strings.HasPrefix(r.stdout, "the rules stored in Redis") {
		t.Errorf("ratelimit version: its first line does not say it shows the rules:\n%s", r.stdout)
	}
	cli(t, "version", "-h").want(t, 0, "ratelimit --version", "")
}

// TestHelpCommand: "ratelimit help COMMAND" prints the command's help, as "ratelimit COMMAND
// -h" does, for every command (help push printed the list of commands).
func TestHelpCommand(t *testing.T) {
	for _, c := range commands {
		want := cli(t, c.name, "-h")
		got := cli(t, "help", c.name)
		if got != want || !strings.HasPrefix(got.stdout, "usage: ratelimit "+c.name+" ") {
			t.Errorf("ratelimit help %s: %+v; want what ratelimit %s -h prints: %+v", c.name, got, c.name, want)
		}
	}
	cli(t, "help", "frobnicate").want(t, 2, "", `ratelimit help: unknown command "frobnicate"`)
	cli(t, "help", "push", "validate").want(t, 2, "", `ratelimit help: give one command, not ["push" "validate"]`)
}
