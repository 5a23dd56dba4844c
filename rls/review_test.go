package rls

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// The server attacked (an adversarial review of issue 40): each test failed while the defect
// its comment names stood.

// hits_addend 0 is a check that counts nothing: of a limit of 0 requests, envoyproxy/ratelimit
// answers OK (INCRBY 0 leaves 0, and 0 > 0 is false), and so does -key-compat reference; the
// server's own keys answered OVER_LIMIT.
func TestCheckOnlyOfAZeroLimitIsOK(t *testing.T) {
	ref, _, _ := refFixture(t)
	for name, f := range map[string]*fixture{"default": newFixture(t, semanticsConfig), "key-compat": ref} {
		if got := summary(f.call(request("edge", hits(0, desc("path", "/closed"))))); !strings.HasPrefix(got, "OK: OK 0/0/HOUR") {
			t.Errorf("%s: hits_addend 0 on requests_per_unit 0: %s, want OK: OK 0/0/HOUR ...", name, got)
		}
		if got := summary(f.call(request("edge", hits(0, limited(0, 3, desc("ip", "9")))))); !strings.HasPrefix(got, "OK: OK 0/0/HOUR") {
			t.Errorf("%s: hits_addend 0 on a supplied limit of 0: %s, want OK: OK 0/0/HOUR ...", name, got)
		}
		if got := summary(f.call(request("edge", desc("path", "/closed")))); !strings.HasPrefix(got, "OVER_LIMIT") {
			t.Errorf("%s: a hit on requests_per_unit 0: %s, want OVER_LIMIT", name, got)
		}
	}
}

// With -key-compat reference, each descriptor gets its own command's answer: the pipeline's
// first error went to every descriptor of the call, so one count a huge hits_addend left at
// 2^63-1 (whose INCRBY then overflows for the rest of its window) failed every call naming
// it, for all their descriptors. That count is over every limit: it answers OVER_LIMIT.
func TestReferenceKeysOneOverflowFailsNoOther(t *testing.T) {
	f, _, _ := refFixture(t)
	f.call(request("edge", hits(math.MaxInt64, desc("ip", "10.0.0.9"))))
	resp, err := f.srv.ShouldRateLimit(t.Context(), request("edge", desc("ip", "10.0.0.8"), desc("ip", "10.0.0.9")))
	if err != nil {
		t.Fatalf("ip=10.0.0.8 (a fresh count) shares the failure of ip=10.0.0.9: %v", err)
	}
	if got := summary(resp); !strings.Contains(got, "OK 2/3/SECOND") || !strings.Contains(got, "OVER_LIMIT 0/3/SECOND") {
		t.Errorf("got %s, want ip=10.0.0.8 OK 2/3/SECOND and ip=10.0.0.9 OVER_LIMIT 0/3/SECOND", got)
	}
}

// An outage of the files is logged (and counted) each time it begins: the error was compared
// with the last one, which a good read of the same contents did not clear, so a second outage
// with the same message went unsaid and Err() kept the first after the files came back.
func TestReloadLogsEveryOutage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.yaml")
	write(t, path, limitFile("a", 1))
	rl := newReloading(t, path)
	for i := range 2 {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		rl.reload(t, false, "no such file")
		write(t, path, limitFile("a", 1)) // back, the same contents
		rl.reload(t, false, "")
		if err := rl.r.Err(); err != nil {
			t.Errorf("outage %d: Err() = %v after the files came back; want nil", i+1, err)
		}
	}
	if n := strings.Count(rl.log.String(), "level=ERROR"); n != 2 {
		t.Errorf("%d error lines for two outages, want 2; log:\n%s", n, rl.log)
	}
}

// The reloader starts from the configuration in force, not from the files as they are when
// it is made: the command reads them, connects to Redis, then makes it, and an edit made
// meanwhile was taken for the configuration in force (never loaded, or if bad never said,
// until the next edit).
func TestReloaderLoadsAChangeMadeBeforeItStarted(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), limitFile("a", 1))
	rl := newReloading(t, dir)
	cfg, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := rl.srv.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a.yaml"), limitFile("a", 7)) // edited while the store connects
	r := NewReloader(rl.srv, dir, quietLogger())
	changed, err := r.Reload()
	if got := rl.limit(t, "a"); !changed || err != nil || got != 7 {
		t.Errorf("Reload() = %v, %v; the server answers limit %d, want 7 (the files on disk)", changed, err, got)
	}
	if changed, err := NewReloader(rl.srv, dir, quietLogger()).Reload(); changed || err != nil {
		t.Errorf("a reloader made over the files in force: Reload() = %v, %v; want false, nil", changed, err)
	}
}

// An unlimited rule that another descriptor's rule replaces is still unlimited:
// envoyproxy/ratelimit marks a descriptor unlimited before it drops the replaced limits
// (constructLimitsToCheck), so it answers OK with limit_remaining 4294967295, not OK and 0.
func TestReplacedUnlimitedStaysUnlimited(t *testing.T) {
	f := newFixture(t, `domain: edge
descriptors:
  - key: free
    rate_limit: {unlimited: true, name: freebie}
  - key: rep
    rate_limit: {unit: hour, requests_per_unit: 5, replaces: [{name: freebie}]}
`)
	got := summary(f.call(request("edge", desc("free", "x"), desc("rep", "y"))))
	if want := "OK: OK 4294967295/-, OK 4/5/HOUR 1h0m0s"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// A file of several YAML documents is refused: the reference reads the first alone, and the
// second's domain was dropped without a word.
func TestSecondDocumentRefused(t *testing.T) {
	_, err := ParseConfig(File{Name: "edge.yaml", Data: []byte(`domain: edge
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 5}
---
domain: other
descriptors:
  - key: b
    rate_limit: {unit: minute, requests_per_unit: 5}
`)})
	if err == nil || !strings.Contains(err.Error(), "edge.yaml:5") || !strings.Contains(err.Error(), "second YAML document") {
		t.Errorf("ParseConfig = %v; want the second document refused at edge.yaml:5, its ---", err)
	}
	for _, ok := range []string{"domain: edge\n", "---\ndomain: edge\n", "domain: edge\n...\n"} {
		if _, err := ParseConfig(File{Name: "edge.yaml", Data: []byte(ok)}); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// Anchors, aliases and merge keys are read as the reference's YAML parser (gopkg.in/yaml.v2)
// reads them: files that load there were refused ("rate_limit must be a mapping, not an
// alias", "unknown field \"<<\"").
func TestYAMLAliasesAndMergeKeys(t *testing.T) {
	f := newFixture(t, `domain: edge
descriptors:
  - key: a
    rate_limit: &rl {unit: minute, requests_per_unit: 5}
  - key: b
    rate_limit: *rl
  - key: c
    rate_limit:
      <<: *rl
      requests_per_unit: 7
      name: cee
`)
	got := summary(f.call(request("edge", desc("a", "1"), desc("b", "1"), desc("c", "1"))))
	if want := "OK: OK 4/5/MINUTE 1m0s, OK 4/5/MINUTE 1m0s, OK 6/7/MINUTE 1m0s"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	// A billion laughs is refused, not expanded.
	bomb := "domain: edge\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'j'; i++ {
		bomb += fmt.Sprintf("%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	if _, err := ParseConfig(File{Name: "bomb.yaml", Data: []byte(bomb)}); err == nil || !strings.Contains(err.Error(), "expand to more than") {
		t.Errorf("a billion laughs: %v; want refused", err)
	}
}

// A ConfigMap's item of path "sub/b.yaml" is a link "sub" into "..data/sub": its directory is
// read through, as the README says every file under the directory is read, subdirectories
// included; it was skipped without a word. A link back into a directory it is under is read
// once, not for ever.
func TestReadFilesThroughDirectoryLinks(t *testing.T) {
	dir := t.TempDir()
	ts := filepath.Join(dir, "..2026_01_01_00_00_00.000000001")
	write(t, filepath.Join(ts, "a.yaml"), limitFile("a", 1))
	write(t, filepath.Join(ts, "sub", "b.yaml"), limitFile("b", 2))
	for _, l := range [][2]string{{filepath.Base(ts), "..data"}, {"..data/a.yaml", "a.yaml"}, {"..data/sub", "sub"}, {".", "sub2"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	files, err := ReadFiles(dir)
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "a.yaml,sub/b.yaml" || err != nil {
		t.Errorf("ReadFiles = %q, %v; want a.yaml,sub/b.yaml", got, err)
	}
}

// MaxStatSeries bounds the series of the per-descriptor metrics, and maxStatLabelBytes their
// labels: a request's values of up to MaxEntryBytes went into key1 and key2 whole, and 10,010
// calls made one scrape of /metrics 588 MB. Two long values that share their first bytes stay
// two series.
func TestStatLabelsAreBounded(t *testing.T) {
	m, err := NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "domain: edge\n", WithMetrics(m))
	long := strings.Repeat("v", MaxEntryBytes-10)
	for _, v := range []string{long + "1", long + "2"} {
		f.call(request("edge", limited(5, typev3.RateLimitUnit_HOUR, desc(long, v, "k2", v))))
	}
	n := 0
	for name := range scrape(t, m) {
		if !strings.Contains(name, "key1=") {
			continue
		}
		n++
		if len(name) > 4*maxStatLabelBytes {
			t.Errorf("a series of %d bytes: %.80s...", len(name), name)
		}
	}
	if n == 0 || n%2 != 0 {
		t.Errorf("%d per-descriptor series; want a pair of each family, one per value", n)
	}
}

// An alias to a node it is in (the fuzzer's first find) is refused: expanded, it has no end.
func TestYAMLAliasCycleRefused(t *testing.T) {
	for _, y := range []string{"domain: edge\na: &a [*a]\n", "domain: edge\na: &a {b: *a}\n", "&r {domain: edge, x: *r}\n"} {
		if _, err := ParseConfig(File{Name: "cycle.yaml", Data: []byte(y)}); err == nil || !strings.Contains(err.Error(), "names a node it is in") {
			t.Errorf("%q: %v; want the cycle refused", y, err)
		}
	}
}

// A reload that leaves no domain (every file removed from the directory) is said louder than
// an Info line: every request is answered OK from then on.
func TestReloadToNoDomainWarns(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), limitFile("a", 1))
	rl := newReloading(t, dir)
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	rl.reload(t, true, "")
	if !strings.Contains(rl.log.String(), "level=WARN") || !strings.Contains(rl.log.String(), "no domain") {
		t.Errorf("a reload to no domain logged:\n%s", rl.log)
	}
}
