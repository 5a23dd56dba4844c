package readmetest

import (
	"go/format"
	"os"
	"slices"
	"strings"
	"testing"
)

// Marked ends a line of a test's copy of a document's code that stands for a line of the
// document that cannot run in a test: FuncBody leaves it out.
const Marked = "// README: "

// Code returns the lines of a document's Go block, as written, without its import line or block
// and the blank line after it, and without the indentation of a block in a list item.
func Code(block string) []string {
	block = strings.Trim(block, "\n")
	if indent := block[:len(block)-len(strings.TrimLeft(block, " "))]; indent != "" { // a block in a list item
		block = strings.ReplaceAll(strings.TrimPrefix(block, indent), "\n"+indent, "\n")
	}
	block = strings.TrimSpace(block)
	if strings.HasPrefix(block, "import (") {
		_, block, _ = strings.Cut(block, ")\n")
	} else if strings.HasPrefix(block, "import ") {
		_, block, _ = strings.Cut(block, "\n")
	}
	return strings.Split(strings.TrimSpace(block), "\n")
}

// Containing returns the fenced block of lang in the document at path (README.md or a guide
// under docs/) that contains text, as written; the test fails unless exactly one does.
func Containing(t testing.TB, path, text, lang string) string {
	t.Helper()
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	rest := string(readme)
	for {
		var block string
		var ok bool
		if _, rest, ok = strings.Cut(rest, "```"+lang+"\n"); !ok {
			break
		}
		if block, rest, ok = strings.Cut(rest, "```"); !ok {
			break
		}
		if strings.Contains(block, text) {
			found = append(found, block)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s has %d %s blocks containing %q; want 1", path, len(found), lang, text)
	}
	return found[0]
}

// FuncBody returns the lines of the body of the function name (its first line starts with
// "func name(") in the Go file at path, one tab less, without the lines marked [Marked].
func FuncBody(t testing.TB, path, name string) []string {
	t.Helper()
	source, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(source), "\nfunc "+name+"(")
	if ok {
		_, body, ok = strings.Cut(body, "{\n")
	}
	if ok {
		body, _, ok = strings.Cut(body, "\n}\n")
	}
	if !ok {
		t.Fatalf("%s has no func %s", path, name)
	}
	var lines []string
	for _, line := range strings.Split(body, "\n") {
		if !strings.Contains(line, Marked) {
			lines = append(lines, strings.TrimPrefix(line, "\t"))
		}
	}
	return lines
}

// Same fails the test unless got, a test's copy of a document's code, is want, the
// document's, line for line.
func Same(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("the document's %s and the test's copy differ:\ndocument:\n%s\ntest:\n%s", what, strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// Gofmt returns a document's code lines (statements) as gofmt writes them: a test's copy of a
// document's line such as `if d, ok := f(c); ok { use(d) }` is the three lines gofmt makes of it.
func Gofmt(t testing.TB, lines []string) []string {
	t.Helper()
	src := "package p\n\nfunc _() {\n" + strings.Join(lines, "\n") + "\n}\n"
	out, err := format.Source([]byte(src))
	if err != nil {
		t.Fatalf("the document's code is not Go that gofmt reads: %v\n%s", err, strings.Join(lines, "\n"))
	}
	_, body, _ := strings.Cut(string(out), "func _() {\n")
	body, _, _ = strings.Cut(body, "\n}\n")
	var formatted []string
	for _, line := range strings.Split(body, "\n") {
		formatted = append(formatted, strings.TrimPrefix(line, "\t"))
	}
	return formatted
}
