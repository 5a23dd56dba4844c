package ratelimitprom_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	ratelimitprom "github.com/a7d3e0dd/ratelimit/prometheus"
)

// readmeMetrics is the Prometheus half of docs/metrics.md's metrics code, as written, over the Redis
// client it names. (The OpenTelemetry half, an alternative to it, is run in that module.)
func readmeMetrics(rdb redis.UniversalClient) (ratelimit.Store, *ratelimitprom.Observer) {
	// Prometheus: the Observer is a prometheus.Collector too.
	metrics := ratelimitprom.New()
	prometheus.MustRegister(metrics)

	store := ratelimit.NewRedisStore(rdb, ratelimit.WithObserver(metrics.Hooks())) // or NewMemoryStore
	return store, metrics
}

// docs/metrics.md's metrics code, Prometheus half, as written: registered with the default registry,
// the observer counts the decisions of a Redis store under the names docs/metrics.md's table gives,
// each policy's verdicts in eight series.
func TestReadmeMetrics(t *testing.T) {
	block := readmetest.Block(t, "../docs/metrics.md", "The packages' names are not their paths' last element", "go")
	var want []string
	skip := false
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		switch {
		case strings.HasPrefix(line, "// Or OpenTelemetry"):
			skip = true
		case skip && line == "":
			skip = false
			continue
		}
		if !skip && line != "" {
			line = "\t" + line
		}
		if !skip {
			want = append(want, line)
		}
	}
	source, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(source), "func readmeMetrics(rdb redis.UniversalClient) (ratelimit.Store, *ratelimitprom.Observer) {\n")
	body, _, _ = strings.Cut(body, "\n\treturn store, metrics\n}")
	if got := strings.Split(body, "\n"); !slices.Equal(got, want) {
		t.Fatalf("docs/metrics.md's metrics code and readmeMetrics differ:\nREADME:\n%s\nreadmeMetrics:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}

	rdb := redistest.Standalone(t)
	store, metrics := readmeMetrics(rdb)
	t.Cleanup(func() { prometheus.Unregister(metrics) })
	l, err := ratelimit.New(store, ratelimit.Policy{Name: "readme", Limit: 1, Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id := "ip:" + redistest.Prefix(t)
	for range 2 {
		if _, err := l.Allow(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	count := func(name string, labels map[string]string) float64 {
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				if hasLabels(m, labels) {
					return m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
		return -1
	}
	// "Every policy exports its eight series (four sources, two outcomes) from its first
	// decision on, at zero until counted."
	series := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == "ratelimit_decisions_total" && hasLabels(m, map[string]string{"policy": "readme"}) {
				series++
			}
		}
	}
	if series != 8 {
		t.Errorf("ratelimit_decisions_total has %d series of the policy; docs/metrics.md says eight", series)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"ratelimit_decisions_total", map[string]string{"policy": "readme", "outcome": "allowed", "source": "store"}, 1},
		{"ratelimit_decisions_total", map[string]string{"policy": "readme", "outcome": "denied", "source": "store"}, 1},
		{"ratelimit_decision_duration_seconds", map[string]string{"source": "store"}, 2},
	} {
		if got := count(c.name, c.labels); got != c.want {
			t.Errorf("%s%v: %v; want %v", c.name, c.labels, got, c.want)
		}
	}
}

// hasLabels reports whether m has every label of want, with its value.
func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}

// docs/metrics.md's table of metrics names each Prometheus metric an Observer exports, with its
// labels, and no other: every row's name and label names are the Observer's, and every
// metric the Observer describes has its row.
func TestReadmeMetricsTable(t *testing.T) {
	readme, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(readme), "| Prometheus | OpenTelemetry | type | labels (Prometheus) |")
	table, _, _ = strings.Cut(table, "\n\n")
	rows := map[string][]string{} // name → label names
	for _, line := range strings.Split(table, "\n")[2:] {
		cells := strings.Split(line, " | ")
		if len(cells) < 4 {
			t.Fatalf("docs/metrics.md's metrics table: a row of %d cells: %s", len(cells), line)
		}
		name := strings.Trim(strings.TrimPrefix(cells[0], "| "), "`")
		rows[name] = labelNames(strings.TrimSuffix(strings.Join(cells[3:], " | "), " |"))
	}

	descs := make(chan *prometheus.Desc, 64)
	ratelimitprom.New().Describe(descs)
	close(descs)
	described := map[string]bool{}
	for d := range descs {
		// A Desc says its name and label names only in its String.
		s := d.String()
		name := between(s, `fqName: "`, `"`)
		described[name] = true
		var labels []string
		for _, l := range strings.Split(between(s, "variableLabels: {", "}"), ",") {
			if l != "" {
				labels = append(labels, l)
			}
		}
		want, ok := rows[name]
		switch {
		case !ok:
			t.Errorf("the Observer exports %s, which docs/metrics.md's table does not list", name)
		case !slices.Equal(sorted(labels), sorted(want)):
			t.Errorf("%s: labels %v; docs/metrics.md's table says %v", name, labels, want)
		}
	}
	for name := range rows {
		if !described[name] {
			t.Errorf("docs/metrics.md's table lists %s, which the Observer does not export", name)
		}
	}
}

// labelNames returns the label names of a cell of docs/metrics.md's labels column: the code spans
// outside parentheses ("none": no label).
func labelNames(cell string) []string {
	var names []string
	depth := 0
	for i := 0; i < len(cell); i++ {
		switch cell[i] {
		case '(':
			depth++
		case ')':
			depth--
		case '`':
			end := strings.IndexByte(cell[i+1:], '`')
			if end < 0 {
				return names
			}
			if depth == 0 {
				names = append(names, cell[i+1:i+1+end])
			}
			i += end + 1
		}
	}
	return names
}

func between(s, from, to string) string {
	_, s, _ = strings.Cut(s, from)
	s, _, _ = strings.Cut(s, to)
	return s
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
