package ratelimitprom_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v2"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/readmetest"
	ratelimitprom "github.com/a7d3e0dd/ratelimit/prometheus"
)

// alertRules is the shape of a Prometheus rule file, as much of it as alerts.yml uses.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// readAlerts parses alerts.yml, strictly.
func readAlerts(t *testing.T) alertRules {
	t.Helper()
	raw, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var file alertRules
	if err := yaml.UnmarshalStrict(raw, &file); err != nil {
		t.Fatal(err)
	}
	return file
}

// The example alerts parse, and select only metrics and labels that the Observer exports.
func TestAlerts(t *testing.T) {
	file := readAlerts(t)

	// What the Observer exports once it has seen a decision, a store error and a rules version,
	// and the labels of each series name.
	obs := ratelimitprom.New()
	l := mustNew(t, ratelimit.NewMemoryStore(ratelimit.WithObserver(obs.Hooks())), ratelimit.Policy{Limit: 1, Window: time.Hour})
	if _, err := allow(l, "k"); err != nil {
		t.Fatal(err)
	}
	obs.Hooks().StoreFailed(timeoutError{})
	obs.RulesApplied("v1")
	obs.RulesEmpty("v1", false)
	obs.Hooks().RedisEvictionPolicy("volatile-lru", true)
	obs.Hooks().DenialCacheDeaf(true)
	obs.Hooks().StoreDegraded("merged_checks", true)
	labels := map[string][]string{}
	for name, mf := range gather(t, obs) {
		var names []string
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			names = append(names, lp.GetName())
		}
		labels[name] = names
		if mf.GetMetric()[0].Histogram != nil {
			labels[name+"_bucket"] = append(slices.Clone(names), "le")
			labels[name+"_sum"], labels[name+"_count"] = names, names
		}
	}

	selector := regexp.MustCompile(`\b(ratelimit_[a-z_]+)(\{([^}]*)\})?`)
	matcher := regexp.MustCompile(`([a-z_]+)\s*(=~|!~|!=|=)`)
	var alerts []string
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %q: it needs alert, expr, labels.severity and annotations.summary", r.Alert)
			}
			if _, err := time.ParseDuration(r.For); err != nil {
				t.Errorf("rule %q: for: %v", r.Alert, err)
			}
			sels := selector.FindAllStringSubmatch(r.Expr, -1)
			if len(sels) == 0 {
				t.Errorf("rule %q selects no metric of this package", r.Alert)
			}
			for _, sel := range sels {
				have, ok := labels[sel[1]]
				if !ok {
					t.Errorf("rule %q: no metric %s", r.Alert, sel[1])
					continue
				}
				for _, m := range matcher.FindAllStringSubmatch(sel[3], -1) {
					if !slices.Contains(have, m[1]) {
						t.Errorf("rule %q: %s has no label %s", r.Alert, sel[1], m[1])
					}
				}
			}
		}
	}
	// The rejection rate of what clients met leaves the shadow policies out, and theirs is
	// watched apart.
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			want := map[string]string{"RateLimitHighRejectionRate": `shadow!="true"`, "RateLimitShadowWouldDeny": `shadow="true"`}[r.Alert]
			for _, sel := range selector.FindAllStringSubmatch(r.Expr, -1) {
				if want != "" && sel[1] == "ratelimit_decisions_total" && !strings.Contains(sel[3], want) {
					t.Errorf("rule %q: %s without %s", r.Alert, sel[0], want)
				}
			}
		}
	}
	want := []string{"RateLimitHighRejectionRate", "RateLimitShadowWouldDeny", "RateLimitStoreSlow", "RateLimitBreakerOpen", "RateLimitFallbackInUse", "RateLimitUnlimitedRequests", "RateLimitDenialCacheDeaf", "RateLimitStoreDegraded", "RateLimitRedisEvictable", "RateLimitStoreErrors", "RateLimitRulesRejected", "RateLimitNoRules"}
	if strings.Join(alerts, " ") != strings.Join(want, " ") {
		t.Errorf("alerts %v, want %v", alerts, want)
	}
}

// timeoutError is a store failure of kind timeout (see observe.ErrorKind).
type timeoutError struct{}

func (timeoutError) Error() string     { return "timeout" }
func (timeoutError) ErrorKind() string { return "timeout" }

// docs/metrics.md's abridged alerting rules are alerts.yml's, expression and duration, as written.
func TestReadmeAlertsAreTheFile(t *testing.T) {
	type rule struct{ expr, forDuration string }
	inFile := map[string]rule{}
	for _, g := range readAlerts(t).Groups {
		for _, r := range g.Rules {
			inFile[r.Alert] = rule{r.Expr, r.For}
		}
	}
	block := readmetest.Block(t, "../docs/metrics.md", "Example alerting rules are in", "yaml")
	var shown []struct {
		Alert string `yaml:"alert"`
		Expr  string `yaml:"expr"`
		For   string `yaml:"for"`
	}
	if err := yaml.UnmarshalStrict([]byte(block), &shown); err != nil {
		t.Fatalf("docs/metrics.md's alerting rules: %v", err)
	}
	if len(shown) == 0 {
		t.Fatal("docs/metrics.md shows no alerting rule")
	}
	for _, r := range shown {
		f, ok := inFile[r.Alert]
		switch {
		case !ok:
			t.Errorf("docs/metrics.md shows alert %s, which alerts.yml does not have", r.Alert)
		case strings.TrimSpace(r.Expr) != strings.TrimSpace(f.expr) || r.For != f.forDuration:
			t.Errorf("docs/metrics.md's %s: expr %q for %s; alerts.yml: expr %q for %s", r.Alert, r.Expr, r.For, f.expr, f.forDuration)
		}
	}
}
