package simulate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit/cmd/ratelimit/internal/simulate"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

// holdsRuns runs the holds scenario in both modes over the memory store, as the picture does.
func holdsRuns(t *testing.T) (simulate.HoldsScenario, simulate.HoldsTrace, simulate.HoldsTrace) {
	t.Helper()
	sc := simulate.Holds()
	pic, err := simulate.HoldsPicture(context.Background(), sc, simulate.Memory)
	if err != nil {
		t.Fatal(err)
	}
	if len(pic.Holds) != 2 || pic.Holds[0].Mode != simulate.ChargedAfter || pic.Holds[1].Mode != simulate.Held {
		t.Fatalf("the holds picture draws %d runs, want ChargedAfter then Held", len(pic.Holds))
	}
	return sc, pic.Holds[0], pic.Holds[1]
}

// TestHoldsPicture checks the runs the holds picture draws against what the issue says of
// them: charged after the fact, all ten are admitted at once and 300 charged against 100; held,
// at most five at once (5 × 20 = 100), the others refused while the estimates are held, the
// settles charging 150 (the overdraft of the five in flight), and no request admitted again
// before the first estimates leave the window.
func TestHoldsPicture(t *testing.T) {
	sc, after, held := holdsRuns(t)
	limit, window := sc.Policy.Limit, sc.Policy.Window
	if after.AdmittedWithin(window) != sc.Requests || after.Refusals() != 0 || after.MostInFlight() != sc.Requests {
		t.Errorf("after the fact: %d admitted, %d refused, %d at once; want all %d at once", after.AdmittedWithin(window), after.Refusals(), after.MostInFlight(), sc.Requests)
	}
	if got, want := after.MostCounted(window), int64(sc.Requests)*sc.Actual; got != want {
		t.Errorf("after the fact: at most %d charged in a window, want %d", got, want)
	}
	atOnce := int(limit / sc.Estimate)
	if held.AdmittedWithin(window) != atOnce || held.MostInFlight() != atOnce {
		t.Errorf("held: %d admitted in the first window, %d at once; want %d", held.AdmittedWithin(window), held.MostInFlight(), atOnce)
	}
	if got, want := held.MostCounted(window), int64(atOnce)*sc.Actual; got != want {
		t.Errorf("held: at most %d charged in a window, want %d (the five in flight at their actual cost)", got, want)
	}
	if at := held.Readmitted(); at < window {
		t.Errorf("held: a request admitted again at %v, before the first estimates left the window (%v)", at, window)
	}
	for _, a := range held.Attempts {
		s := sampleAt(t, held, a.At)
		if a.Allowed && s.Used+s.Held > limit {
			t.Errorf("held: a request admitted at %v with %d used and %d held against %d", a.At, s.Used, s.Held, limit)
		}
		if !a.Allowed && s.Used+s.Held+sc.Estimate <= limit {
			t.Errorf("held: a request refused at %v with %d used and %d held: its estimate fitted", a.At, s.Used, s.Held)
		}
	}
	// The first refusals come while the five estimates are held and nothing has settled.
	if first := held.Attempts[atOnce]; first.Allowed || sampleAt(t, held, first.At).Held != limit {
		t.Errorf("held: the try after the fifth (%+v) is not refused on the holds alone", first)
	}
}

// TestHoldsPictureAgreesWithTheLimiter: what the picture draws (the charges of the last window,
// settled and held, summed from the decisions) is what the limiter counts: at every sample, the
// Remaining of a cost-0 check is the limit less it, or 0 beyond the limit.
func TestHoldsPictureAgreesWithTheLimiter(t *testing.T) {
	sc, after, held := holdsRuns(t)
	for _, tr := range []simulate.HoldsTrace{after, held} {
		for _, s := range tr.Samples {
			if want := max(sc.Policy.Limit-s.Used-s.Held, 0); s.Remaining != want {
				t.Fatalf("%s, at %v: %d used and %d held, but the limiter has Remaining %d, want %d",
					tr.Mode.Call(sc), s.At, s.Used, s.Held, s.Remaining, want)
			}
		}
	}
}

// TestHoldsPictureLeavesOutNothing: between the stretches of time the picture shows, nothing
// happens: no try, no settle, and the state stands still.
func TestHoldsPictureLeavesOutNothing(t *testing.T) {
	sc, after, held := holdsRuns(t)
	for k := 1; k < len(sc.Shown); k++ {
		from, to := sc.Shown[k-1].End, sc.Shown[k].Start
		inGap := func(at time.Duration) bool { return at > from && at < to }
		for _, tr := range []simulate.HoldsTrace{after, held} {
			for _, a := range tr.Attempts {
				if inGap(a.At) {
					t.Errorf("%s: a try at %v, which the picture leaves out", tr.Mode.Call(sc), a.At)
				}
			}
			for _, at := range tr.Settles {
				if inGap(at) {
					t.Errorf("%s: a settle at %v, which the picture leaves out", tr.Mode.Call(sc), at)
				}
			}
			last := sampleAt(t, tr, from)
			for _, s := range tr.Samples {
				if inGap(s.At) && (s.Used != last.Used || s.Held != last.Held || s.Remaining != last.Remaining) {
					t.Fatalf("%s: the state changes at %v, which the picture leaves out", tr.Mode.Call(sc), s.At)
				}
			}
		}
	}
}

// sampleAt returns the state as it stood at time at: the last sample at or before it.
func sampleAt(t *testing.T, tr simulate.HoldsTrace, at time.Duration) simulate.HoldsSample {
	t.Helper()
	var found *simulate.HoldsSample
	for i := range tr.Samples {
		if tr.Samples[i].At <= at {
			found = &tr.Samples[i]
		}
	}
	if found == nil {
		t.Fatalf("no sample at or before %v", at)
	}
	return *found
}

// resultsFile is the repository's results file, from this package's directory.
var resultsFile = filepath.Join("..", "..", "..", "..", "docs", "results.md")

// TestHoldsResults keeps the section "holds" of docs/results.md, the comparison of the holds
// picture's runs that the documents quote, current: it fails when the section's table is not
// the one the runs give now. The figures come from the fake clock and depend on no machine;
// to write the section again:
//
//	RATELIMIT_MEASURE=1 go test -run TestHoldsResults ./cmd/ratelimit/internal/simulate
func TestHoldsResults(t *testing.T) {
	sc, after, held := holdsRuns(t)
	body := simulate.HoldsResults(sc, []simulate.HoldsTrace{after, held})
	if os.Getenv("RATELIMIT_MEASURE") == "1" {
		run := loadgen.Run{
			When:    time.Now(),
			Machine: fmt.Sprintf("machine: any (%s %s/%s): the memory store on a fake clock", runtime.Version(), runtime.GOOS, runtime.GOARCH),
			How:     "the holds picture's two runs (docs/pictures/holds.svg), through the Limiter's Peek, Reserve and Settle",
			Load:    "none counts: nothing here is timed",
		}
		if err := loadgen.WriteSection(resultsFile, "holds", "The holds picture: charged after the fact, or reserved then settled (TestHoldsResults)", run, body+"\n"); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(resultsFile)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "<!-- section holds -->\n")
	if ok {
		section, _, ok = strings.Cut(section, "<!-- end of section holds -->\n")
	}
	const again = "from the repository's root, run\n\tRATELIMIT_MEASURE=1 go test -run TestHoldsResults ./cmd/ratelimit/internal/simulate"
	switch {
	case !ok:
		t.Fatalf("docs/results.md has no section holds; %s", again)
	case !strings.HasSuffix(section, "\n"+body+"\n"):
		t.Fatalf("the section holds of docs/results.md is stale; %s\nIt should end with:\n%s", again, body)
	}
}
