package ratelimitotel_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
	"github.com/a7d3e0dd/ratelimit/observe"
	ratelimitotel "github.com/a7d3e0dd/ratelimit/otel"
)

// readmeMetrics is the OpenTelemetry half of docs/metrics.md's metrics code, as written, over the Redis
// client it names. (The Prometheus half, an alternative to it, is run in that module.)
func readmeMetrics(rdb redis.UniversalClient) (ratelimit.Store, *ratelimitotel.Observer, error) {
	// Or OpenTelemetry: instruments from any MeterProvider; the application picks SDK and exporter.
	metrics, err := ratelimitotel.New(otel.GetMeterProvider())

	store := ratelimit.NewRedisStore(rdb, ratelimit.WithObserver(metrics.Hooks())) // or NewMemoryStore
	return store, metrics, err                                                     // README: what the caller uses
}

// docs/metrics.md's metrics code, OpenTelemetry half, as written: with the global MeterProvider an SDK
// one, the observer records the decisions of a Redis store under the names docs/metrics.md's table
// gives, each policy's verdicts in eight series, and each Redis check as a database call
// (db.system.name=redis, db.operation.name=FCALL).
func TestReadmeMetrics(t *testing.T) {
	code := readmetest.Code(readmetest.Containing(t, "../docs/metrics.md", "ratelimitotel.New(otel.GetMeterProvider())", "go"))
	i := slices.IndexFunc(code, func(line string) bool { return strings.HasPrefix(line, "// Or OpenTelemetry") })
	if i < 0 {
		t.Fatal("docs/metrics.md's metrics code has no OpenTelemetry half")
	}
	readmetest.Same(t, "metrics code (OpenTelemetry)", readmetest.FuncBody(t, "readme_test.go", "readmeMetrics"), code[i:])

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	otel.SetMeterProvider(mp)
	store, metrics, err := readmeMetrics(redistest.Standalone(t))
	if err != nil {
		t.Fatal(err)
	}
	m := meter{metrics, reader}
	l := mustNew(t, store, ratelimit.Policy{Name: "readme", Limit: 1, Window: time.Hour})
	id := "ip:" + redistest.Prefix(t)
	for range 2 {
		if _, err := allow(l, id); err != nil {
			t.Fatal(err)
		}
	}
	series := 0
	for _, dp := range m.metric(t, "ratelimit.policy.decisions").Data.(metricdata.Sum[int64]).DataPoints {
		if v, _ := dp.Attributes.Value("ratelimit.policy"); v.AsString() == "readme" {
			series++
		}
	}
	if series != 8 {
		t.Errorf("ratelimit.policy.decisions has %d series of the policy; docs/metrics.md says eight", series)
	}
	if a, d := m.decisions(t, "readme", "allowed", "store"), m.decisions(t, "readme", "denied", "store"); a != 1 || d != 1 {
		t.Errorf("decisions by the store: %d allowed, %d denied; want 1 and 1", a, d)
	}
	if n := m.histogram(t, "ratelimit.decision.duration", attribute.String("ratelimit.source", "store")).Count; n != 2 {
		t.Errorf("ratelimit.decision.duration{ratelimit.source=store}: %d; want 2", n)
	}
	dps := m.metric(t, "db.client.operation.duration").Data.(metricdata.Histogram[float64]).DataPoints
	if len(dps) != 1 || dps[0].Count != 2 {
		t.Fatalf("db.client.operation.duration: %d series; want 1 with the 2 Redis checks", len(dps))
	}
	for key, want := range map[attribute.Key]string{"db.system.name": "redis", "db.operation.name": "FCALL"} {
		if v, _ := dps[0].Attributes.Value(key); v.AsString() != want {
			t.Errorf("db.client.operation.duration's %s = %q; docs/metrics.md says %s=%s", key, v.AsString(), key, want)
		}
	}
}

// instrument is an instrument the Observer made: its kind (the metric API's method) and unit.
type instrument struct{ kind, unit string }

// recordingMeter records the instruments made of it.
type recordingMeter struct {
	noop.Meter
	made map[string]instrument
}

func (m recordingMeter) Int64Counter(name string, opts ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	m.made[name] = instrument{"Int64Counter", metric.NewInt64CounterConfig(opts...).Unit()}
	return noop.Int64Counter{}, nil
}

func (m recordingMeter) Int64UpDownCounter(name string, opts ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	m.made[name] = instrument{"Int64UpDownCounter", metric.NewInt64UpDownCounterConfig(opts...).Unit()}
	return noop.Int64UpDownCounter{}, nil
}

func (m recordingMeter) Int64Histogram(name string, opts ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	m.made[name] = instrument{"Int64Histogram", metric.NewInt64HistogramConfig(opts...).Unit()}
	return noop.Int64Histogram{}, nil
}

func (m recordingMeter) Int64Gauge(name string, opts ...metric.Int64GaugeOption) (metric.Int64Gauge, error) {
	m.made[name] = instrument{"Int64Gauge", metric.NewInt64GaugeConfig(opts...).Unit()}
	return noop.Int64Gauge{}, nil
}

func (m recordingMeter) Int64ObservableCounter(name string, opts ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	m.made[name] = instrument{"Int64ObservableCounter", metric.NewInt64ObservableCounterConfig(opts...).Unit()}
	return noop.Int64ObservableCounter{}, nil
}

func (m recordingMeter) Int64ObservableUpDownCounter(name string, opts ...metric.Int64ObservableUpDownCounterOption) (metric.Int64ObservableUpDownCounter, error) {
	m.made[name] = instrument{"Int64ObservableUpDownCounter", metric.NewInt64ObservableUpDownCounterConfig(opts...).Unit()}
	return noop.Int64ObservableUpDownCounter{}, nil
}

func (m recordingMeter) Int64ObservableGauge(name string, opts ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	m.made[name] = instrument{"Int64ObservableGauge", metric.NewInt64ObservableGaugeConfig(opts...).Unit()}
	return noop.Int64ObservableGauge{}, nil
}

func (m recordingMeter) Float64Counter(name string, opts ...metric.Float64CounterOption) (metric.Float64Counter, error) {
	m.made[name] = instrument{"Float64Counter", metric.NewFloat64CounterConfig(opts...).Unit()}
	return noop.Float64Counter{}, nil
}

func (m recordingMeter) Float64UpDownCounter(name string, opts ...metric.Float64UpDownCounterOption) (metric.Float64UpDownCounter, error) {
	m.made[name] = instrument{"Float64UpDownCounter", metric.NewFloat64UpDownCounterConfig(opts...).Unit()}
	return noop.Float64UpDownCounter{}, nil
}

func (m recordingMeter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	m.made[name] = instrument{"Float64Histogram", metric.NewFloat64HistogramConfig(opts...).Unit()}
	return noop.Float64Histogram{}, nil
}

func (m recordingMeter) Float64Gauge(name string, opts ...metric.Float64GaugeOption) (metric.Float64Gauge, error) {
	m.made[name] = instrument{"Float64Gauge", metric.NewFloat64GaugeConfig(opts...).Unit()}
	return noop.Float64Gauge{}, nil
}

func (m recordingMeter) Float64ObservableCounter(name string, opts ...metric.Float64ObservableCounterOption) (metric.Float64ObservableCounter, error) {
	m.made[name] = instrument{"Float64ObservableCounter", metric.NewFloat64ObservableCounterConfig(opts...).Unit()}
	return noop.Float64ObservableCounter{}, nil
}

func (m recordingMeter) Float64ObservableUpDownCounter(name string, opts ...metric.Float64ObservableUpDownCounterOption) (metric.Float64ObservableUpDownCounter, error) {
	m.made[name] = instrument{"Float64ObservableUpDownCounter", metric.NewFloat64ObservableUpDownCounterConfig(opts...).Unit()}
	return noop.Float64ObservableUpDownCounter{}, nil
}

func (m recordingMeter) Float64ObservableGauge(name string, opts ...metric.Float64ObservableGaugeOption) (metric.Float64ObservableGauge, error) {
	m.made[name] = instrument{"Float64ObservableGauge", metric.NewFloat64ObservableGaugeConfig(opts...).Unit()}
	return noop.Float64ObservableGauge{}, nil
}

// recordingProvider hands out a recordingMeter.
type recordingProvider struct {
	noop.MeterProvider
	meter recordingMeter
}

func (p recordingProvider) Meter(string, ...metric.MeterOption) metric.Meter { return p.meter }

// registered returns the instruments an Observer makes, by name, and the attribute keys each
// records, by name: the Observer is told of one event of every kind.
func registered(t *testing.T) (map[string]instrument, map[string][]string) {
	made := map[string]instrument{}
	if _, err := ratelimitotel.New(recordingProvider{meter: recordingMeter{made: made}}); err != nil {
		t.Fatal(err)
	}
	m := newMeter(t)
	m.Hooks().Decided(ratelimit.DecisionEvent{Source: observe.SourceStore, Latency: time.Millisecond,
		Store:   &observe.StoreInfo{System: "redis", Operation: "FCALL", Procedure: "f", ServerAddress: "localhost", ServerPort: 6379},
		Results: []ratelimit.PolicyResult{{Policy: ratelimit.Policy{Name: "p"}, Allowed: true}}})
	m.Hooks().Answered(observe.RequestEvent{Result: observe.Results()[0], Waited: time.Millisecond})
	m.Hooks().StoreFailed(errors.New("broken"))
	m.Hooks().BreakerChanged(observe.BreakerClosed, observe.BreakerOpen)
	m.Hooks().DenialCacheDeaf(true)
	m.Hooks().StoreDegraded(observe.Degradations()[0], true)
	m.Hooks().SlotHeld(true, 0)
	m.Hooks().SlotHeld(false, time.Millisecond)
	m.Hooks().Queued(true)
	m.Hooks().Held(observe.HoldEvent{Estimate: 20})
	m.Hooks().Held(observe.HoldEvent{Settled: true, Estimate: 20, Actual: 35})
	m.Hooks().MemoryStoreFull(true)
	m.Hooks().KeyFellBack(observe.KeyFallbackReasons()[0])
	m.Hooks().RedisEvictionPolicy("allkeys-lru", true)
	m.RulesApplied("1")
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	attrs := map[string][]string{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			keys := []string{}
			add := func(set attribute.Set) {
				for _, kv := range set.ToSlice() {
					if !slices.Contains(keys, string(kv.Key)) {
						keys = append(keys, string(kv.Key))
					}
				}
			}
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes)
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes)
				}
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes)
				}
			default:
				t.Fatalf("%s: data of type %T", mt.Name, mt.Data)
			}
			slices.Sort(keys)
			attrs[mt.Name] = keys
		}
	}
	for name := range made {
		if _, ok := attrs[name]; !ok {
			t.Fatalf("%s recorded nothing: tell the Observer of the event it records", name)
		}
	}
	return made, attrs
}

// topLevel returns text without what it has in parentheses.
func topLevel(text string) string {
	var b strings.Builder
	depth := 0
	for _, r := range text {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

var backticked = regexp.MustCompile("`([^`]+)`")

// docs/metrics.md's table of metrics names each OpenTelemetry instrument an Observer makes, and no
// other, of the kind it says (a counter is a counter, synchronous or observable; a histogram a
// histogram; "gauge (up-down counter)" an up-down counter; a gauge an observable gauge), with
// as many attributes as the Prometheus metric of its row has labels (db.client.operation.duration,
// which has its own, aside); the attributes docs/metrics.md's text names are the instruments'.
func TestReadmeMetricsTable(t *testing.T) {
	made, attrs := registered(t)
	readme, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(readme), "| Prometheus | OpenTelemetry | type | labels (Prometheus) |")
	table, _, _ = strings.Cut(table, "\n\n")
	kinds := map[string][]string{
		"counter":                 {"Int64Counter", "Int64ObservableCounter"},
		"histogram":               {"Float64Histogram", "Int64Histogram"},
		"gauge (up-down counter)": {"Int64UpDownCounter"},
		"gauge":                   {"Int64ObservableGauge"},
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(table, "\n")[2:] {
		cells := strings.Split(line, " | ")
		if len(cells) < 4 {
			t.Fatalf("docs/metrics.md's metrics table: a row of %d cells: %s", len(cells), line)
		}
		kind, _, _ := strings.Cut(cells[2], ":")
		kind, _, _ = strings.Cut(kind, ",")
		labels := 0
		if l := strings.TrimSuffix(strings.Join(cells[3:], " | "), " |"); l != "none" {
			labels = len(backticked.FindAllString(topLevel(l), -1))
		}
		for i, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			rows[name] = true
			got, ok := made[name]
			switch {
			case !ok:
				t.Errorf("docs/metrics.md's metrics table names %s, which the Observer does not make", name)
			case !slices.Contains(kinds[kind], got.kind):
				t.Errorf("docs/metrics.md's metrics table: %s is a %s; the Observer makes an %s", name, kind, got.kind)
			case i == 0 && len(attrs[name]) != labels:
				t.Errorf("docs/metrics.md's metrics table: %s, with %d labels in Prometheus; its attributes: %v", name, labels, attrs[name])
			}
		}
	}
	for name := range made {
		if !rows[name] {
			t.Errorf("the Observer makes %s, which docs/metrics.md's metrics table does not name", name)
		}
	}

	_, text, _ := strings.Cut(string(readme), "The OpenTelemetry instruments follow the semantic conventions:")
	text, _, _ = strings.Cut(text, "\n\n")
	named := 0
	for _, m := range backticked.FindAllStringSubmatch(text, -1) {
		key, _, _ := strings.Cut(m[1], "=")
		if !regexp.MustCompile(`^[a-z_]+(\.[a-z_]+)+$`).MatchString(key) {
			continue // not an attribute: EVALSHA, ratelimit/otel, otelhttp
		}
		named++
		found := false
		for _, keys := range attrs {
			found = found || slices.Contains(keys, key)
		}
		if !found {
			t.Errorf("docs/metrics.md names the attribute %s, which no instrument has", key)
		}
	}
	if named < 10 {
		t.Errorf("docs/metrics.md's text on OpenTelemetry attributes: %d attributes found; want at least 10", named)
	}
}

// The table of otel/doc.go gives each instrument the Observer makes, and no other, with its
// instrument kind, unit and attributes.
func TestDocInstrumentsTable(t *testing.T) {
	made, attrs := registered(t)
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "//\tname ")
	_, table, _ = strings.Cut(table, "\n")
	table, _, _ = strings.Cut(table, "\n//\n")
	rows := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		fields := strings.Fields(strings.TrimPrefix(line, "//\t"))
		if len(fields) < 4 {
			t.Fatalf("doc.go's instruments table: a row of %d fields: %s", len(fields), line)
		}
		name, kind, unit := fields[0], fields[1], fields[2]
		rows[name] = true
		var keys []string
		for _, a := range strings.Split(topLevel(strings.Join(fields[3:], " ")), ",") {
			if a = strings.TrimSpace(a); a != "" {
				keys = append(keys, a)
			}
		}
		slices.Sort(keys)
		got, ok := made[name]
		if !ok {
			t.Errorf("doc.go names %s, which the Observer does not make", name)
			continue
		}
		if want := (instrument{kind, unit}); got != want {
			t.Errorf("doc.go: %s is %v; the Observer makes %v", name, want, got)
		}
		if fmt.Sprint(keys) != fmt.Sprint(attrs[name]) {
			t.Errorf("doc.go: %s has the attributes %v; the Observer records %v", name, keys, attrs[name])
		}
	}
	for name := range made {
		if !rows[name] {
			t.Errorf("the Observer makes %s, which doc.go's table does not name", name)
		}
	}
}
