package rls

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/fakeclock"
)

func limitFile(domain string, perSecond int) string {
	return fmt.Sprintf("domain: %s\ndescriptors:\n  - key: ip\n    rate_limit: {unit: second, requests_per_unit: %d}\n", domain, perSecond)
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// reloading is a server of the files at path, with its reloader and what it logged.
type reloading struct {
	srv *Server
	r   *Reloader
	log *bytes.Buffer
}

func newReloading(t *testing.T, path string) *reloading {
	t.Helper()
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New(fakeclock.T0)
	srv, err := NewServer(ratelimit.NewMemoryStore(ratelimit.WithClock(clk)), cfg, WithClock(clk), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	return &reloading{srv: srv, r: NewReloader(srv, path, slog.New(slog.NewTextHandler(&buf, nil))), log: &buf}
}

// limit is the limit the server answers for domain's descriptor ip=1, 0 for none.
func (rl *reloading) limit(t *testing.T, domain string) uint32 {
	t.Helper()
	resp, err := rl.srv.ShouldRateLimit(context.Background(), request(domain, hits(0, desc("ip", "1"))))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Statuses[0].GetCurrentLimit().GetRequestsPerUnit()
}

func (rl *reloading) reload(t *testing.T, wantChanged bool, wantErr string) {
	t.Helper()
	changed, err := rl.r.Reload()
	if changed != wantChanged || (err == nil) != (wantErr == "") || err != nil && !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("Reload() = %v, %v; want %v, error with %q", changed, err, wantChanged, wantErr)
	}
}

func TestReloadDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.yaml"), limitFile("a", 1))
	write(t, filepath.Join(dir, "sub", "b.yaml"), limitFile("b", 2))
	write(t, filepath.Join(dir, ".hidden.yaml"), "not: [yaml") // dot files are skipped
	write(t, filepath.Join(dir, ".git", "c.yaml"), limitFile("c", 3))
	rl := newReloading(t, dir)
	if got := strings.Join(rl.srv.Config().Files(), ","); got != "a.yaml,sub/b.yaml" {
		t.Fatalf("files %q, want a.yaml,sub/b.yaml", got)
	}
	rl.reload(t, false, "") // unchanged

	write(t, filepath.Join(dir, "a.yaml"), limitFile("a", 5))
	rl.reload(t, true, "")
	if got := rl.limit(t, "a"); got != 5 {
		t.Errorf("after the edit, limit %d, want 5", got)
	}

	// A bad edit is refused, with file and line; the last good configuration stays.
	write(t, filepath.Join(dir, "sub", "b.yaml"), limitFile("b", 2)+"    unlimited: true\n")
	rl.reload(t, false, `sub/b.yaml:5: unknown field "unlimited" in a descriptor`)
	rl.reload(t, false, "sub/b.yaml:5:") // the same contents: still refused, not logged again
	if got := rl.limit(t, "a"); got != 5 {
		t.Errorf("after a refused reload, limit %d, want 5 still", got)
	}
	if n := strings.Count(rl.log.String(), "level=ERROR"); n != 1 {
		t.Errorf("%d errors logged, want 1:\n%s", n, rl.log)
	}
	if rl.r.Err() == nil {
		t.Error("Err() = nil after a refusal")
	}
	// Two files of one domain.
	write(t, filepath.Join(dir, "sub", "b.yaml"), limitFile("a", 2))
	rl.reload(t, false, `sub/b.yaml:1: duplicate domain "a": already declared at a.yaml:1`)

	write(t, filepath.Join(dir, "sub", "b.yaml"), limitFile("b", 7))
	rl.reload(t, true, "")
	if got := rl.limit(t, "b"); got != 7 || rl.r.Err() != nil {
		t.Errorf("after the fix, limit %d and Err %v, want 7 and nil", got, rl.r.Err())
	}
	// A file removed removes its domain.
	if err := os.Remove(filepath.Join(dir, "sub", "b.yaml")); err != nil {
		t.Fatal(err)
	}
	rl.reload(t, true, "")
	if got := rl.limit(t, "b"); got != 0 {
		t.Errorf("after the removal, limit %d, want none", got)
	}
}

// TestReloadConfigMap swaps a directory as the kubelet updates a ConfigMap volume: the files
// are links into ..data, itself a link renamed over by a new one.
func TestReloadConfigMap(t *testing.T) {
	dir := t.TempDir()
	version := func(name string, perSecond int) {
		write(t, filepath.Join(dir, name, "rules.yaml"), limitFile("edge", perSecond))
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..2026_01_01_00_00_00.1", 1)
	if err := os.Symlink(filepath.Join("..data", "rules.yaml"), filepath.Join(dir, "rules.yaml")); err != nil {
		t.Fatal(err)
	}
	rl := newReloading(t, dir)
	if got := strings.Join(rl.srv.Config().Files(), ","); got != "rules.yaml" {
		t.Fatalf("files %q, want rules.yaml alone", got)
	}
	version("..2026_01_01_00_01_00.2", 9)
	rl.reload(t, true, "")
	if got := rl.limit(t, "edge"); got != 9 {
		t.Errorf("after the swap, limit %d, want 9", got)
	}
	version("..2026_01_01_00_02_00.3", 0)
	write(t, filepath.Join(dir, "..2026_01_01_00_02_00.3", "rules.yaml"), "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: eon}\n")
	rl.reload(t, false, "rules.yaml:4: invalid rate limit unit 'eon'")
	if got := rl.limit(t, "edge"); got != 9 {
		t.Errorf("after a bad swap, limit %d, want 9 still", got)
	}
}

// TestReloadRootLink moves the link that is the configuration's path (RUNTIME_ROOT), as
// envoyproxy/ratelimit's RUNTIME_WATCH_ROOT deployments do.
func TestReloadRootLink(t *testing.T) {
	base := t.TempDir()
	write(t, filepath.Join(base, "v1", "config", "r.yaml"), limitFile("edge", 1))
	write(t, filepath.Join(base, "v2", "config", "r.yaml"), limitFile("edge", 2))
	current := filepath.Join(base, "current")
	if err := os.Symlink("v1", current); err != nil {
		t.Fatal(err)
	}
	rl := newReloading(t, filepath.Join(current, "config"))
	if err := os.Symlink("v2", filepath.Join(base, "next")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(base, "next"), current); err != nil {
		t.Fatal(err)
	}
	rl.reload(t, true, "")
	if got := rl.limit(t, "edge"); got != 2 {
		t.Errorf("after the move, limit %d, want 2", got)
	}
}

func TestReloadMissing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "one.yaml")
	write(t, path, limitFile("edge", 4))
	rl := newReloading(t, path)
	if got := rl.srv.Config().Files(); len(got) != 1 || got[0] != "one.yaml" {
		t.Fatalf("files %q, want one.yaml", got)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	rl.reload(t, false, "no such file")
	if got := rl.limit(t, "edge"); got != 4 {
		t.Errorf("with the file gone, limit %d, want 4 still", got)
	}
	write(t, path, limitFile("edge", 4)) // back as it was: nothing to change
	rl.reload(t, false, "")
}

func TestLoadConfigErrors(t *testing.T) {
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "nothing")); err == nil {
		t.Error("LoadConfig of a missing path succeeded")
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "x.yaml"), "domain: \"\"\n")
	if _, err := LoadConfig(dir); err == nil || err.Error() != "x.yaml:1: config file cannot have empty domain" {
		t.Errorf("got %v, want x.yaml:1: config file cannot have empty domain", err)
	}
}

func TestDump(t *testing.T) {
	cfg, err := ParseConfig(File{Name: "f", Data: []byte(semanticsConfig)})
	if err != nil {
		t.Fatal(err)
	}
	dump := cfg.Dump()
	for _, want := range []string{
		"edge.ip: unit=SECOND requests_per_unit=3, shadow_mode: false, quota_mode: false\n",
		"edge.path_/free: unlimited\n",
		"edge.path_/trial: unit=MINUTE requests_per_unit=2, shadow_mode: true, quota_mode: false\n",
		"edge.user.plan_free: unit=MONTH requests_per_unit=2, shadow_mode: false, quota_mode: false\n",
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("dump lacks %q:\n%s", want, dump)
		}
	}
}
