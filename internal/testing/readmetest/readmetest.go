// Package readmetest reads the code blocks of the documents as written, README.md and the
// guides under docs/, each named by its path, for the tests that run them: the root module's
// and those of the other modules of this repository. (The root's TestDocBlocksAreTested finds
// the calls of Block and Containing, and fails on a block that none selects.)
package readmetest

import (
	"os"
	"strings"
	"testing"
)

// Block returns the first fenced block of lang ("go", "sh", "yaml"; "" for a block without
// one) that follows marker in the document at path (README.md or a guide under docs/), as
// written; the test fails when there is none.
func Block(t testing.TB, path, marker, lang string) string {
	t.Helper()
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), marker)
	if ok {
		_, block, ok = strings.Cut(block, "```"+lang+"\n")
	}
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatalf("%s has no %s block after %q", path, lang, marker)
	}
	return block
}
