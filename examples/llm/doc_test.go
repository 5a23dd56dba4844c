package main

import (
	"go/parser"
	"go/token"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit/examples/internal/exampletest"
)

// docCommands returns the commands of main.go's documentation that start with prefix, each
// joined from its lines continued by a backslash.
func docCommands(t *testing.T, prefix string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil || f.Doc == nil {
		t.Fatalf("main.go's documentation: %v", err)
	}
	var cmds []string
	cont := false
	for line := range strings.SplitSeq(f.Doc.Text(), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case cont:
			cmds[len(cmds)-1] += " " + strings.TrimSuffix(line, `\`)
		case strings.HasPrefix(line, prefix):
			cmds = append(cmds, strings.TrimSuffix(line, `\`))
		default:
			continue
		}
		cont = strings.HasSuffix(line, `\`)
	}
	return cmds
}

// The commands of the documentation, as written: it runs from the examples directory, and
// its two curl lines, run against the built command, answer a whole completion with the
// rate-limit headers and its usage, and a stream that ends with its usage and [DONE].
func TestDocCommands(t *testing.T) {
	if runs := docCommands(t, "go run"); len(runs) == 0 || !strings.HasPrefix(runs[0], "go run ./llm ") {
		t.Errorf("the documentation runs %q; want go run ./llm", runs)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not in PATH")
	}
	curls := docCommands(t, "curl ")
	if len(curls) != 2 {
		t.Fatalf("the documentation has %d curl commands, want 2: %q", len(curls), curls)
	}
	inst := exampletest.StartArgs(t, exampletest.Build(t), []string{"-stream-interval", "0"})
	u, err := url.Parse(inst.URL)
	if err != nil {
		t.Fatal(err)
	}
	run := func(cmd string) string {
		t.Helper()
		if !strings.Contains(cmd, "localhost:8080/") {
			t.Fatalf("%q does not ask localhost:8080", cmd)
		}
		out, err := exec.Command("sh", "-c", strings.ReplaceAll(cmd, "localhost:8080", u.Host)).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		return strings.ReplaceAll(string(out), "\r", "")
	}
	whole := run(curls[0])
	for _, want := range []string{"HTTP/1.1 200 OK\n", "X-Ratelimit-Remaining-Requests: 59\n", "X-Ratelimit-Remaining-Tokens: ", "X-Ratelimit-Reset-Tokens: ", `"total_tokens":15}`} {
		if !strings.Contains(whole, want) {
			t.Errorf("the first curl printed no %q:\n%s", want, whole)
		}
	}
	stream := run(curls[1])
	if !strings.HasPrefix(stream, "data: {") || !strings.Contains(stream, `"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":10,"total_tokens":15}}`) ||
		!strings.HasSuffix(stream, "data: [DONE]\n\n") {
		t.Errorf("the second curl printed:\n%s\nwant a stream of chunks, its usage last, then [DONE]", stream)
	}
}
