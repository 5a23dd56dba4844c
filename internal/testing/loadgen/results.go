package loadgen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// The results file (docs/results.md) holds one section per measuring program: make bench's
// (tools/benchtable's four: bench, calendar, bench-holds and bench-tail; tools/adapterbench's
// bench-adapters; tools/peerbench's),
// TestMeasureChooser's and TestHoldsResults's. Each program rewrites its own section and keeps the others, so every figure the documents cite is in one
// file, dated by the run that made it.

// resultsHead is what the results file says before its sections.
const resultsHead = `# Performance results

Written by the measuring programs, each in a section of its own: ` + "`make bench`" + ` (tools/benchtable,
tools/adapterbench, then tools/peerbench), ` + "`RATELIMIT_MEASURE=1 go test -run 'TestMeasureChooser|TestHoldsResults' ./cmd/ratelimit/internal/simulate`" + `,
and, in the prometheus and otel modules, ` + "`RATELIMIT_MEASURE=1 go test -run TestMeasureObserverCost .`" + `.
Do not edit it: run them again. README.md, the guides under docs/, ARCHITECTURE.md and CHANGELOG.md
take their measured figures from here, and ` + "`TestDocFiguresAreInResults`" + ` fails when a figure they mark is not in this file.

Each timed figure is a median of rounds, each taken right after its floor. The ratios to a
floor measured in the same run are what to compare across runs and machines; the absolute
figures move with the machine and its load.
`

// Run describes the run of a measuring program, for its section of the results file.
type Run struct {
	When    time.Time
	Machine string // the machine, Go and the servers' and libraries' versions
	How     string // the rounds, the load generated, and how long the run took
	Load    string // the machine's load while it ran
}

// LoadAverage returns the machine's 1-minute load average, from /proc/loadavg where there is
// one, else "?".
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b) + " ?")[0]
}

// WriteSection writes the section name of the results file at path: a heading, the run
// described, then body (the program's tables). It replaces the section of that name if the
// file has one, else appends it, and what precedes the first section by resultsHead; a file
// that does not exist is created.
func WriteSection(path, name, heading string, run Run, body string) error {
	begin, end := "<!-- section "+name+" -->\n", "<!-- end of section "+name+" -->\n"
	section := fmt.Sprintf("%s## %s\n\nWritten on %s.\n\n- %s\n- run: %s\n- load: %s\n\n%s%s",
		begin, heading, run.When.UTC().Format("2006-01-02 15:04 UTC"), run.Machine, run.How, run.Load, body, end)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	text := string(old)
	if i := strings.Index(text, "<!-- section "); i >= 0 {
		text = resultsHead + "\n" + text[i:]
	} else {
		text = resultsHead
	}
	if before, rest, ok := strings.Cut(text, begin); ok {
		_, after, ok := strings.Cut(rest, end)
		if !ok {
			return fmt.Errorf("%s: section %s has no end (%q)", path, name, strings.TrimSpace(end))
		}
		text = before + section + after
	} else {
		text = strings.TrimRight(text, "\n") + "\n\n" + section
	}
	return os.WriteFile(path, []byte(text), 0o644)
}
