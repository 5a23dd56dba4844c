package rls

import (
	"os"
	"path/filepath"
	"testing"
)

// A config directory that holds a versioned directory and a link to it (current -> v1): the
// walk before this change skipped the link; now it reads both, and the domain is declared twice.
// A directory with a second name (v1/ and current -> v1) is read once: read twice, its
// domains were duplicates and the whole configuration was refused.
func TestReadFilesReadsADirectoryOfTwoNamesOnce(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "v1", "a.yaml"), []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("v1", filepath.Join(root, "current")); err != nil {
		t.Fatal(err)
	}
	files, err := ReadFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Logf("read %s", f.Name)
	}
	if _, err := LoadConfig(root); err != nil {
		t.Errorf("LoadConfig: %v", err)
	}
}
