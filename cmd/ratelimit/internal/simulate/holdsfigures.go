package simulate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// counted returns what the charges that still count at time at, those of the last window,
// come to: settled, and held (estimates not yet settled). A unit charged at t counts while
// at < t+window, as the sliding log counts it.
func (tr HoldsTrace) counted(at, window time.Duration) (used, held int64) {
	for _, c := range tr.Charges {
		if c.At > at || at >= c.At+window {
			continue
		}
		if c.Estimate && (c.Settled < 0 || c.Settled > at) {
			held += c.Units
		} else {
			used += c.Units
		}
	}
	return used, held
}

// AdmittedWithin returns how many requests the limiter admitted in the first d.
func (tr HoldsTrace) AdmittedWithin(d time.Duration) int {
	n := 0
	for _, a := range tr.Attempts {
		if a.Allowed && a.At < d {
			n++
		}
	}
	return n
}

// Admitted returns how many requests the limiter admitted.
func (tr HoldsTrace) Admitted() int { return tr.AdmittedWithin(math.MaxInt64) }

// Refusals returns how many tries the limiter refused.
func (tr HoldsTrace) Refusals() int { return len(tr.Attempts) - tr.Admitted() }

// MostInFlight returns the most requests admitted and not yet settled at once.
func (tr HoldsTrace) MostInFlight() int {
	most := 0
	for _, s := range tr.Samples {
		most = max(most, s.InFlight)
	}
	return most
}

// MostCounted returns the most that the charges of one window came to, settled and held: at
// the time of a charge, since they only fall in between.
func (tr HoldsTrace) MostCounted(window time.Duration) int64 {
	var most int64
	for _, c := range tr.Charges {
		used, held := tr.counted(c.At, window)
		most = max(most, used+held)
	}
	return most
}

// Readmitted returns when the limiter admitted a request after refusing one, or -1 if it
// never did.
func (tr HoldsTrace) Readmitted() time.Duration {
	refused := false
	for _, a := range tr.Attempts {
		switch {
		case !a.Allowed:
			refused = true
		case refused:
			return a.At
		}
	}
	return -1
}

// HoldsResults is the comparison of the runs of sc as a Markdown table, one column per run:
// the section "holds" of docs/results.md, which the documents quote.
func HoldsResults(sc HoldsScenario, traces []HoldsTrace) string {
	limit, window := sc.Policy.Limit, sc.Policy.Window
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests %s apart, each estimated at %d tokens, costing %d and taking %s, against %d tokens per %s (`%s`); a refused one comes back after its Retry-After; the run lasts %s.\n\n",
		sc.Requests, duration(sc.Every), sc.Estimate, sc.Actual, duration(sc.Takes), limit, durationWords(window), GoName(sc.Policy.Algorithm), duration(sc.Length()))
	row := func(name string, cell func(tr HoldsTrace) string) {
		b.WriteString("| " + name + " |")
		for _, tr := range traces {
			b.WriteString(" " + cell(tr) + " |")
		}
		b.WriteString("\n")
	}
	row("", func(tr HoldsTrace) string { return tr.Mode.Call(sc) })
	row("---", func(HoldsTrace) string { return "---" })
	row("admitted in the first "+durationWords(window), func(tr HoldsTrace) string {
		return fmt.Sprintf("%d of %d", tr.AdmittedWithin(window), sc.Requests)
	})
	row("at most at once", func(tr HoldsTrace) string { return fmt.Sprint(tr.MostInFlight()) })
	row("tries refused", func(tr HoldsTrace) string { return fmt.Sprint(tr.Refusals()) })
	row("most charged in any "+durationWords(window), func(tr HoldsTrace) string {
		most := tr.MostCounted(window)
		return fmt.Sprintf("%d tokens, %s× the limit", most, ratio(most, limit))
	})
	row("over-admission: charged beyond the limit", func(tr HoldsTrace) string {
		over := max(tr.MostCounted(window)-limit, 0)
		return fmt.Sprintf("%d tokens, +%d%%", over, 100*over/limit)
	})
	row("first admitted after a refusal", func(tr HoldsTrace) string {
		if at := tr.Readmitted(); at >= 0 {
			return "at " + seconds(at) + " s"
		}
		return "none refused"
	})
	return b.String()
}

// ratio writes a/b briefly: "3", "1.5".
func ratio(a, b int64) string {
	return strconv.FormatFloat(float64(a)/float64(b), 'f', -1, 64)
}
