package rules

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
)

// replaceFile writes data to path as editors do: a temporary file renamed over it.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// watched opens the rules file path holding data and watches it until the test ends.
func watched(t *testing.T, data []byte, opts ...Option) (*Engine, *reporter, string) {
	t.Helper()
	return watchedLogging(t, data, slog.New(slog.DiscardHandler), opts...)
}

// watchedLogging is watched logging to logger.
func watchedLogging(t *testing.T, data []byte, logger *slog.Logger, opts ...Option) (*Engine, *reporter, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "limits.yaml")
	replaceFile(t, path, data)
	rep := newReporter()
	started := make(chan struct{})
	opts = append([]Option{WithReporter(rep), WithLogger(logger), byPlan(), whenStarted(func() { close(started) })}, opts...)
	e, err := Open(ratelimit.NewMemoryStore(), path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	rep.next(t) // v1 applied
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.WatchFile(ctx, path) }()
	<-started
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WatchFile: %v", err)
		}
	})
	return e, rep, path
}

// TestWatchFile: a change of the file is applied; a file that does not parse is reported with
// its line and field, once, and the last good rules stay; fixing it applies it. Run with the
// operating system's notifications, and with polling alone (the fallback).
func TestWatchFile(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"notified", []Option{WithPollInterval(time.Hour)}}, // only a notification can apply it
		{"polling", []Option{WithPollInterval(10 * time.Millisecond), withoutNotify()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, rep, path := watched(t, limitsDoc("v1", 2, 5), c.opts...)
			replaceFile(t, path, limitsDoc("v2", 3, 5))
			if ev := rep.next(t); ev != "applied v2" || e.Version() != "v2" {
				t.Fatalf("after the change: %q, version %q; want v2 applied", ev, e.Version())
			}
			bad := strings.Replace(string(limitsDoc("v3", 4, 5)), "window: 1m}", "window: 1x}", 1)
			replaceFile(t, path, []byte(bad))
			ev := rep.next(t)
			if want := `rejected ` + path + `:6: rules[0].policies[0].window: "1x" is not a duration`; !strings.HasPrefix(ev, want) {
				t.Errorf("a bad file: %q, want %q", ev, want)
			}
			if v := e.Version(); v != "v2" {
				t.Errorf("after a bad file, version %q in use; want the last good v2", v)
			}
			replaceFile(t, path, limitsDoc("v4", 4, 5))
			if ev := rep.next(t); ev != "applied v4" {
				t.Fatalf("after the fix: %q, want v4 applied (and the bad file reported once)", ev)
			}
			os.Remove(path)
			if ev := rep.next(t); !strings.HasPrefix(ev, "rejected open "+path) || e.Version() != "v4" {
				t.Errorf("the file removed: %q, version %q; want it reported and v4 kept", ev, e.Version())
			}
		})
	}
}

// TestWatchFileInPlace: a file rewritten in place (truncated, then written) is applied once it
// settles.
func TestWatchFileInPlace(t *testing.T) {
	e, rep, path := watched(t, limitsDoc("v1", 2, 5), WithPollInterval(time.Hour))
	if err := os.WriteFile(path, limitsDoc("v2", 3, 5), 0o644); err != nil {
		t.Fatal(err)
	}
	for e.Version() != "v2" {
		if ev := rep.next(t); strings.HasPrefix(ev, "applied") && ev != "applied v2" {
			t.Fatalf("%q, want v2", ev)
		}
	}
}

// TestWatchFileKeepsLastGood: each kind of bad file is reported with its line, and the rules
// in use stay the last good ones.
func TestWatchFileKeepsLastGood(t *testing.T) {
	good := string(limitsDoc("v1", 2, 5))
	e, rep, path := watched(t, []byte(good), WithPollInterval(10*time.Millisecond), withoutNotify())
	for _, c := range []struct{ name, doc, want string }{
		{"syntax", strings.Replace(good, "rules:", "rules: [", 1), ":3: YAML syntax"},
		{"unknown field", strings.Replace(good, "key: api_key\n", "key: api_key\n    kee: ip\n", 1), `:5: rules[0].kee: unknown field`},
		{"impossible limit", strings.Replace(good, "limit: 2,", "limit: 0,", 1), `:6: rules[0].policies[0].limit: ratelimit: invalid policy "per-minute": Limit is 0`},
		{"duplicate names", strings.Replace(good, "name: api-pro", "name: api", 1), `:7: rules[1].name: "api" is also the name of rules[0]`},
	} {
		replaceFile(t, path, []byte(strings.Replace(c.doc, "v1", "v-"+strings.ReplaceAll(c.name, " ", "-"), 1)))
		ev := rep.next(t)
		if !strings.HasPrefix(ev, "rejected "+path) || !strings.Contains(ev, path+c.want) {
			t.Errorf("%s: %q, want an error at %q", c.name, ev, path+c.want)
		}
		if v := e.Version(); v != "v1" {
			t.Errorf("%s: version %q in use, want the last good v1", c.name, v)
		}
	}
}

// TestOpenTooLarge: a file larger than MaxFileSize is refused with Parse's error, not read to
// its end.
func TestOpenTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "limits.yaml")
	replaceFile(t, path, []byte("# "+strings.Repeat("x", 2*MaxFileSize)))
	_, err := Open(ratelimit.NewMemoryStore(), path)
	if err == nil || !strings.Contains(err.Error(), "a rules file may be at most 1048576 (1 MiB)") {
		t.Errorf("Open of a 2 MiB file: %v, want the size error", err)
	}
}
