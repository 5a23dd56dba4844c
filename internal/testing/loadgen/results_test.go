package loadgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each program rewrites its own section of the results file and keeps the others' as they
// were; the head is the current one.
func TestWriteSectionKeepsTheOthers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.md")
	run := func(day int) Run {
		return Run{When: time.Date(2026, 12, day, 9, 30, 0, 0, time.UTC), Machine: "m", How: "h", Load: "l"}
	}
	for _, w := range []struct {
		name, body string
		day        int
	}{{"bench", "| a | `x` | 1.0 µs |\n", 1}, {"peers", "| b | `y` | 2.0 µs |\n", 1}, {"bench", "| a | `x` | 3.0 µs |\n", 2}} {
		if err := WriteSection(path, w.name, w.name+" heading", run(w.day), w.body); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.HasPrefix(text, resultsHead) {
		t.Errorf("the file does not begin with the head:\n%s", text)
	}
	for _, want := range []string{"3.0 µs", "2.0 µs", "Written on 2026-12-02 09:30 UTC", "Written on 2026-12-01 09:30 UTC"} {
		if !strings.Contains(text, want) {
			t.Errorf("the file lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "1.0 µs") || strings.Count(text, "<!-- section bench -->") != 1 {
		t.Errorf("bench's first section was not replaced:\n%s", text)
	}
	if strings.Index(text, "section bench") > strings.Index(text, "section peers") {
		t.Errorf("bench's section moved after peers':\n%s", text)
	}
}
