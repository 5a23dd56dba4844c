package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/simulate"
)

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{nil, 2, "usage: ratelimit <command>"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"simulate", "extra"}, 2, "unexpected arguments"},
		{[]string{"simulate", "-nope"}, 2, "flag provided but not defined"},
		{[]string{"simulate", "-h"}, 0, "usage: ratelimit simulate"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.inStderr) {
			t.Errorf("run(%q) = %d, stderr %q; want %d and %q in stderr", tc.args, code, stderr.String(), tc.code, tc.inStderr)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "simulate") {
		t.Errorf("run(help) = %d, stdout %q; want 0 and the commands", code, stdout.String())
	}
}

// TestSimulateWritesThePictures: the command writes every picture the package draws, and
// prints what each algorithm admitted.
func TestSimulateWritesThePictures(t *testing.T) {
	out := filepath.Join(t.TempDir(), "pictures")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"simulate", "-out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
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
		if !strings.Contains(stdout.String(), "wrote "+p.File) {
			t.Errorf("stdout does not say it wrote %s:\n%s", p.File, stdout.String())
		}
	}
	for _, want := range []string{"FixedWindow{}", "LeakyBucket{Shaping: true}", "most admitted in any 1 s"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, stdout.String())
		}
	}
}
