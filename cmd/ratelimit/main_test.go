package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/cmd/ratelimit/internal/simulate"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// result is what one run of the command did.
type result struct {
	code           int
	stdout, stderr string
}

// cli runs the command with args. Whatever happens, it must not panic, and it writes
// errors to stderr only.
func cli(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	r := result{code, stdout.String(), stderr.String()}
	if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") {
		t.Fatalf("ratelimit %q panicked:\n%s", args, r.stderr)
	}
	if code != 0 && r.stderr == "" {
		t.Errorf("ratelimit %q: exit %d without a word on stderr", args, code)
	}
	return r
}

// want checks the exit code of r and that its stdout and stderr hold the given texts.
func (r result) want(t *testing.T, code int, inStdout, inStderr string) {
	t.Helper()
	if r.code != code || !strings.Contains(r.stdout, inStdout) || !strings.Contains(r.stderr, inStderr) {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, %q in stdout, %q in stderr", r.code, r.stdout, r.stderr, code, inStdout, inStderr)
	}
}

// TestUsage: usage errors exit 2 with one line on stderr, -h exits 0 with the help on stdout,
// for every command.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args               []string
		code               int
		inStdout, inStderr string
	}{
		{nil, 2, "", "usage: ratelimit <command>"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"help"}, 0, "validate", ""},
		{[]string{"simulate", "extra"}, 2, "", `ratelimit simulate: unexpected arguments ["extra"] (see ratelimit simulate -h)`},
		{[]string{"simulate", "-nope"}, 2, "", "ratelimit simulate: flag provided but not defined: -nope"},
		{[]string{"simulate", "-h"}, 0, "usage: ratelimit simulate", ""},
		{[]string{"validate"}, 2, "", "ratelimit validate: missing FILE"},
		{[]string{"validate", "-h"}, 0, "usage: ratelimit validate FILE...", ""},
		{[]string{"push", "-redis", "localhost:6379"}, 2, "", "ratelimit push: missing FILE"},
		{[]string{"push", "limits.yaml"}, 2, "", "ratelimit push: -redis is required"},
		{[]string{"push", "-redis", "localhost:6379", "a.yaml", "b.yaml"}, 2, "", `unexpected arguments ["b.yaml"]`},
		{[]string{"push", "-redis", "localhost:6379", "-key", "", "a.yaml"}, 2, "", "-key is empty"},
		{[]string{"push", "-redis", "localhost:6379", "-timeout", "0s", "a.yaml"}, 2, "", "-timeout must be more than 0"},
		{[]string{"push", "-h"}, 0, "-password", ""},
		{[]string{"version", "-redis", "localhost:6379", "extra"}, 2, "", `unexpected arguments ["extra"]`},
		{[]string{"version", "-h"}, 0, "usage: ratelimit version", ""},
		{[]string{"version", "-redis", "localhost:6379", "-db", "-1"}, 2, "", `invalid value "-1" for flag -db: "-1" is not a database number`},
		{[]string{"version", "-redis", "redis://ops:s3cret@localhost:6379/2", "-db", "3"}, 2, "", "ratelimit version: -db 3 and the URL's database 2 differ: give one (see ratelimit version -h)"},
		{[]string{"inspect", "-redis", "localhost:6379", "x"}, 2, "", "-rule is required"},
		{[]string{"inspect", "-redis", "localhost:6379", "-rule", "api"}, 2, "", "give the IDENTITY, or the parts of the rule's key"},
		{[]string{"inspect", "-redis", "localhost:6379", "-rule", "api", "-ip", "192.0.2.1", "ip:192.0.2.1"}, 2, "", "not both"},
		{[]string{"inspect", "-redis", "localhost:6379", "-rule", "api", "-prefix", "a{b}", "x"}, 2, "", "-prefix \"a{b}\" holds '{' or '}'"},
		{[]string{"inspect", "-redis", "localhost:6379", "-rule", "api", "-header", "X-Tenant", "x"}, 2, "", `invalid value "X-Tenant" for flag -header: "X-Tenant" is not "Name: value"`},
		{[]string{"inspect", "-redis", "localhost:6379", "-rule", "api", ""}, 2, "", "ratelimit inspect: the IDENTITY is empty: give it as the limiter sees it"},
		{[]string{"reset", "-redis", "localhost:6379", "-rule", "api", ""}, 2, "", "ratelimit reset: the IDENTITY is empty"},
		{[]string{"inspect", "-h"}, 0, "12:ip:192.0.2.1|17:route:/search/{q}", ""},
		{[]string{"reset", "-redis", "localhost:6379", "-rule", "api", "a", "b"}, 2, "", `unexpected arguments ["b"]`},
		{[]string{"reset", "-h"}, 0, "Limiter.Reset", ""},
	} {
		r := cli(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout, tc.inStdout) || !strings.Contains(r.stderr, tc.inStderr) {
			t.Errorf("ratelimit %q: exit %d, stdout %q, stderr %q; want %d, %q in stdout, %q in stderr",
				tc.args, r.code, r.stdout, r.stderr, tc.code, tc.inStdout, tc.inStderr)
		}
		if tc.code == 2 && strings.Count(r.stderr, "\n") > 1 && tc.args != nil && tc.args[0] != "frobnicate" {
			t.Errorf("ratelimit %q: a usage error of %d lines; want one:\n%s", tc.args, strings.Count(r.stderr, "\n"), r.stderr)
		}
	}
}

// TestSimulateWritesThePictures: the command writes every picture the package draws, and
// prints what each algorithm admitted.
func TestSimulateWritesThePictures(t *testing.T) {
	out := filepath.Join(t.TempDir(), "pictures")
	r := cli(t, "simulate", "-out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	pics, err := simulate.Pictures(context.Background(), simulate.Memory)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pics {
		got, err := os.ReadFile(filepath.Join(out, p.File))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, p.SVG) {
			t.Errorf("%s differs from what package simulate draws", p.File)
		}
		if !strings.Contains(r.stdout, "wrote "+p.File) {
			t.Errorf("stdout does not say it wrote %s:\n%s", p.File, r.stdout)
		}
	}
	for _, want := range []string{"FixedWindow{}", "LeakyBucket{Shaping: true}", "most admitted in any 1 s"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the summary lacks %q:\n%s", want, r.stdout)
		}
	}
}
