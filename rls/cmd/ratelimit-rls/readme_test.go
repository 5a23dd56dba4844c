package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

const readme = "../../README.md"

// TestReadmeQuickStart runs the quick start of README as written: the server's command line
// (over a Redis of the test's own, on a fake clock at the start of an hour), the loop of
// checks, and the output README shows.
func TestReadmeQuickStart(t *testing.T) {
	server := strings.Split(strings.TrimSpace(readmetest.Block(t, readme, "From a clone of the repository", "sh")), "\n")
	if len(server) != 3 || server[0] != "cd rls" || !strings.HasPrefix(server[1], "redis-server --port 6379 ") {
		t.Fatalf("the server's block is not cd rls, redis-server --port 6379, go run: %q", server)
	}
	args, ok := strings.CutPrefix(server[2], "go run ./cmd/ratelimit-rls ")
	if !ok {
		t.Fatalf("the server's command %q is not go run ./cmd/ratelimit-rls", server[2])
	}
	var serverArgs []string
	for a := range strings.FieldsSeq(args) {
		switch a {
		case "localhost:6379":
			a = redistest.Addr(t)
		case "example/config":
			a = "../../" + a // the test runs in cmd/ratelimit-rls
		}
		serverArgs = append(serverArgs, a)
	}
	r := start(t, noEnv, append(serverArgs, "-prefix", redistest.Prefix(t), "-timeout", "1m")...)

	client := strings.Split(strings.TrimSpace(readmetest.Block(t, readme, "In another terminal", "sh")), "\n")
	m := regexp.MustCompile(`^for i in 1 2 3 4; do go run ./cmd/ratelimit-rls check (.+); done$`).FindStringSubmatch(client[len(client)-1])
	if len(client) != 2 || client[0] != "cd rls" || m == nil {
		t.Fatalf("the client's block is not cd rls and a loop of four checks: %q", client)
	}
	var out bytes.Buffer
	for range 4 {
		run(context.Background(), append([]string{"check", "-addr", r.grpcAddr}, strings.Fields(m[1])...), noEnv, &out, io.Discard, nil)
	}
	if want := readmetest.Block(t, readme, "The fourth is over the limit", ""); out.String() != want {
		t.Errorf("the checks printed\n%s\nREADME shows\n%s", out.String(), want)
	}
}

// TestReadmeRefusedConfig starts the command on README's invalid example and compares its
// errors with README's.
func TestReadmeRefusedConfig(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"-config", "../../example/invalid"}, noEnv, io.Discard, &stderr, nil); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := readmetest.Block(t, readme, "For `example/invalid/edge.yaml`, the command says", "")
	if !strings.HasSuffix(stderr.String(), "\n"+want) {
		t.Errorf("the command said\n%s\nREADME shows\n%s", stderr.String(), want)
	}
}
