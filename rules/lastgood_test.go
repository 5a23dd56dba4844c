package rules

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/a7d3e0dd/ratelimit/internal/testing/redistest"
)

// An application that takes its rules from Redis starts while Redis is down, on the rules it
// last applied (kept in a file), says so, and applies the fleet's rules once Redis is back
// (issue: OpenRedis returned the error, and the application could not start).
func TestStartWithoutRedis(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	lastGood := filepath.Join(t.TempDir(), "last-good.yaml")
	if _, err := Push(t.Context(), client, key, "limits.yaml", doc("1")); err != nil {
		t.Fatal(err)
	}
	// An instance that ran while Redis was up kept version 1, and said where it came from.
	var started lockedBuffer
	first, err := OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key, WithLastKnownGood(lastGood),
		WithLogger(slog.New(slog.NewTextHandler(&started, nil))))
	if err != nil || first.Version() != "1" {
		t.Fatalf("OpenRedis with Redis up: %v, %v", first, err)
	}
	if want := `msg="ratelimit rules applied" version=1 rules=1 source="redis ` + key + `"`; !strings.Contains(started.String(), want) {
		t.Errorf("OpenRedis with Redis up logged:\n%s\nwant %s", started.String(), want)
	}
	if data, err := os.ReadFile(lastGood); err != nil || string(data) != string(doc("1")) {
		t.Fatalf("the last known good file: %q, %v; want version 1 as pushed", data, err)
	}

	redistest.Kill(t)
	var logged lockedBuffer
	e, err := OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key, WithLastKnownGood(lastGood),
		WithStartTimeout(500*time.Millisecond), WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	if err != nil {
		t.Fatalf("OpenRedis with Redis down: %v; want it to start on the last known good rules", err)
	}
	if e.Version() != "1" || !strings.Contains(logged.String(), "Redis does not answer") || !strings.Contains(logged.String(), "last known good") {
		t.Errorf("started on version %q, logging:\n%s\nwant version 1, from the last known good file, saying why", e.Version(), logged.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.WatchRedis(ctx, client, key) }()
	t.Cleanup(func() { cancel(); <-done })

	redistest.Restart(t) // an empty Redis: the rules are pushed again
	if _, err := Push(t.Context(), client, key, "limits.yaml", doc("2")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); e.Version() != "2"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("30 s after Redis came back with version 2, the engine runs %q", e.Version())
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if data, _ := os.ReadFile(lastGood); string(data) == string(doc("2")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the last known good file was not updated to version 2")
		}
	}
}

// With no rules in Redis and no file, the default rules given start the application; with
// neither, OpenRedis fails at once with an error that names the remedy.
func TestStartOnDefaultRules(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	e, err := OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key,
		WithLastKnownGood(filepath.Join(t.TempDir(), "none.yaml")), WithDefaultRules("default.yaml", doc("0")),
		WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil || e.Version() != "0" {
		t.Fatalf("OpenRedis with no rules stored: %v, %v; want the default rules, version 0", e, err)
	}
	if _, err := OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key); err == nil || !strings.Contains(err.Error(), "WithLastKnownGood") {
		t.Errorf("OpenRedis with no rules and no fallback: %v; want an error naming WithLastKnownGood", err)
	}
}

// TestStartedOnRulesOfTheStoredVersion: an instance started on its default (or last known good)
// rules, while Redis held none, learns the fleet's when Redis has them. Its watcher compared
// versions only: when the fleet's first push bore the version the default rules bore ("1",
// say) but other rules, the instance kept its defaults, and recorded in the fleet that it ran
// version 1, so "ratelimit push" reported the push applied everywhere while it limited
// otherwise than every instance started since (found by a review). The watcher now reads the
// stored document once when the rules in use did not come from it.
func TestStartedOnRulesOfTheStoredVersion(t *testing.T) {
	client := redistest.Standalone(t)
	key := redistest.Prefix(t) + "rules"
	defaults := []byte("version: \"1\"\nrules:\n  - {name: default, key: ip, policies: [{limit: 1000, window: 1m}]}\n")
	subscribed := make(chan struct{}, 1)
	e, err := OpenRedis(t.Context(), ratelimit.NewMemoryStore(), client, key, WithDefaultRules("default.yaml", defaults),
		WithLogger(slog.New(slog.DiscardHandler)), WithPollInterval(time.Hour), signal(subscribed), WithInstanceName("a"))
	if err != nil || e.Version() != "1" {
		t.Fatalf("OpenRedis with no rules stored: %v, %v; want the default rules, version 1", e, err)
	}
	pushed := []byte("version: \"1\"\nrules:\n  - {name: default, key: ip, policies: [{limit: 10, window: 1m}]}\n")
	if _, err := Push(t.Context(), client, key, "limits.yaml", pushed); err != nil {
		t.Fatal(err)
	}
	watching(t, e, client, key, subscribed)
	if limit := e.Set().rules[0].Policies[0].Limit; limit != 10 {
		t.Errorf("after catching up with the stored version 1, the engine limits to %d a minute, not the fleet's 10", limit)
	}
	fleet, err := Fleet(t.Context(), client, key)
	if err != nil || len(fleet) != 1 || fleet[0].Running != "1" || fleet[0].Refused != "" {
		t.Errorf("Fleet: %+v, %v; want a running version 1", fleet, err)
	}
}

// TestLastKnownGoodSynced: the last known good file was written to a temporary file and
// renamed over the old one without a sync, so after a power loss the new name could point at
// an empty or partial file, and the application would start on nothing (found by a review).
// The temporary file is synced with the whole document before it is renamed, then the
// directory, which holds the rename; a sync that fails leaves the old file, and is logged.
func TestLastKnownGoodSynced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "last-good.yaml")
	if err := os.WriteFile(path, doc("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logged lockedBuffer
	e, err := NewEngine(ratelimit.NewMemoryStore(), mustParseString(t, string(doc("1"))), WithLastKnownGood(path),
		WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	if err != nil {
		t.Fatal(err)
	}
	var synced []string // what each sync saw: what it synced, and the content at path
	defer func(orig func(*os.File) error) { syncFile = orig }(syncFile)
	syncFile = func(f *os.File) error {
		at, _ := os.ReadFile(path)
		switch content, _ := os.ReadFile(f.Name()); {
		case f.Name() == dir:
			synced = append(synced, "the directory, with "+string(at))
		case filepath.Dir(f.Name()) == dir && f.Name() != path:
			synced = append(synced, "a temporary file of "+string(content)+", with "+string(at))
		default:
			synced = append(synced, "another file: "+f.Name())
		}
		return f.Sync()
	}
	e.keepLastGood(doc("2"))
	want := []string{"a temporary file of " + string(doc("2")) + ", with " + string(doc("1")), "the directory, with " + string(doc("2"))}
	if strings.Join(synced, "\n") != strings.Join(want, "\n") {
		t.Errorf("synced:\n%s\nwant the temporary file with version 2 before the rename, then the directory after it:\n%s",
			strings.Join(synced, "\n"), strings.Join(want, "\n"))
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != string(doc("2")) {
		t.Errorf("the last known good file: %q, %v; want version 2", data, err)
	}

	syncFile = func(*os.File) error { return errors.New("disk on fire") }
	e.keepLastGood(doc("3"))
	if data, _ := os.ReadFile(path); string(data) != string(doc("2")) {
		t.Errorf("after a failed sync, the last known good file is %q; want version 2 kept", data)
	}
	if !strings.Contains(logged.String(), "cannot keep the last known good rules") || !strings.Contains(logged.String(), "disk on fire") {
		t.Errorf("a failed sync was not logged:\n%s", logged.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d files after a failed sync; want the temporary file removed", len(entries))
	}
}
