package metricstest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/loadgen"
)

// discardWriter is the cheapest http.ResponseWriter, so a benchmark measures the handler.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// Middleware returns a benchmark of the net/http middleware over the memory store, with one
// policy that admits every request, its store observed by obs (nil: none).
func Middleware(obs *ratelimit.Observer) func(*testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	var opts []ratelimit.StoreOption
	if obs != nil {
		opts = append(opts, ratelimit.WithObserver(obs))
	}
	return func(b *testing.B) {
		h := ratelimit.Middleware(MustNew(b, ratelimit.NewMemoryStore(opts...), ratelimit.Policy{Limit: 1e9, Window: time.Hour}))(ok)
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "192.0.2.1:1234"
		w := &discardWriter{h: http.Header{}}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			clear(w.h)
			h.ServeHTTP(w, r)
		}
	}
}

// measureRounds is how many rounds MeasureObserverCost takes of each variant.
const measureRounds = 8

// MeasureObserverCost measures what a metrics module's observer costs a request, and writes
// it as the section name of the results file at path (docs/results.md, which docs/metrics.md
// cites): the middleware with the observer (on) and with one that does nothing (nop, what
// reporting costs the core), each as a ratio to the middleware without an observer (off)
// timed right before it in the same round, and decided, the observer's Decided alone. Each
// is the median of measureRounds rounds, with their range. It runs only with
// RATELIMIT_MEASURE=1: a measure, not a test.
func MeasureObserverCost(t *testing.T, path, name, heading string, on *ratelimit.Observer, decided func(*testing.B)) {
	if os.Getenv("RATELIMIT_MEASURE") != "1" {
		t.Skipf("set RATELIMIT_MEASURE=1 to measure the cost of the observer and write it to %s", path)
	}
	start, loadStart := time.Now(), loadgen.LoadAverage()
	nsPerOp := func(f func(*testing.B)) float64 {
		r := testing.Benchmark(f)
		return float64(r.T.Nanoseconds()) / float64(r.N)
	}
	var onRatio, nopRatio, decidedNs []float64
	var allocs int64
	for range measureRounds {
		off := nsPerOp(Middleware(nil))
		onRatio = append(onRatio, nsPerOp(Middleware(on))/off)
		off = nsPerOp(Middleware(nil))
		nopRatio = append(nopRatio, nsPerOp(Middleware(NopObserver()))/off)
		r := testing.Benchmark(decided)
		decidedNs = append(decidedNs, float64(r.T.Nanoseconds())/float64(r.N))
		allocs = testing.Benchmark(Middleware(on)).AllocsPerOp()
	}
	var b strings.Builder
	b.WriteString("| figure | median | range |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| the middleware with the observer, over without (on/off) | %s× | %s× |\n", median(onRatio, "%.2f"), span(onRatio, "%.2f"))
	fmt.Fprintf(&b, "| the middleware with an observer that does nothing, over without (nop/off) | %s× | %s× |\n", median(nopRatio, "%.2f"), span(nopRatio, "%.2f"))
	fmt.Fprintf(&b, "| `Decided` alone, per decision | %s ns | %s ns |\n", median(decidedNs, "%.0f"), span(decidedNs, "%.0f"))
	fmt.Fprintf(&b, "| allocations per request, with the observer | %d allocs | |\n", allocs)
	t.Log("\n" + b.String())
	run := loadgen.Run{
		When:    start,
		Machine: fmt.Sprintf("machine: %d cores (GOMAXPROCS %d), %s %s/%s", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH),
		How: fmt.Sprintf("%d rounds, each timing off then on, off then nop, then Decided (testing.Benchmark, 1 s each); the memory store, one policy; took %s",
			measureRounds, time.Since(start).Round(time.Second)),
		Load: fmt.Sprintf("1-minute load average %s at the start, %s at the end", loadStart, loadgen.LoadAverage()),
	}
	if note := os.Getenv("RATELIMIT_MEASURE_NOTE"); note != "" {
		run.Load += "; " + note
	}
	if err := loadgen.WriteSection(path, name, heading, run, b.String()); err != nil {
		t.Fatal(err)
	}
}

// median formats the median of xs.
func median(xs []float64, format string) string {
	s := slices.Sorted(slices.Values(xs))
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return fmt.Sprintf(format, m)
}

// span formats the least and the greatest of xs, "a–b".
func span(xs []float64, format string) string {
	return fmt.Sprintf(format+"–"+format, slices.Min(xs), slices.Max(xs))
}
