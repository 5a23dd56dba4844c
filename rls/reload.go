package rls

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// ReadFiles reads the configuration files at path: path itself when it is a file, else every
// file under the directory path, its subdirectories included (links to directories read
// through, as a ConfigMap's item of path "sub/b.yaml" is a link "sub" into "..data"; a
// directory of two names, or a link back into one it is under, read once), in lexical order, except those whose name
// starts with a dot — as envoyproxy/ratelimit reads RUNTIME_ROOT/RUNTIME_SUBDIRECTORY
// /config with RUNTIME_IGNOREDOTFILES. A Kubernetes ConfigMap volume fits as it is: its files
// are symbolic links into "..data", itself a link that the kubelet swaps to a new directory
// atomically, and the dotted entries are skipped while the links are read through. path may
// be a symbolic link too (a RUNTIME_ROOT swapped by its link): it is resolved at every call.
// Each file's Name is its path relative to path (the file's base name when path is a file).
func ReadFiles(path string) ([]File, error) {
	root, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("rls: config %s: %w", path, err)
	}
	info, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("rls: config %s: %w", path, err)
	}
	if !info.IsDir() {
		data, err := os.ReadFile(root)
		if err != nil {
			return nil, fmt.Errorf("rls: config %s: %w", path, err)
		}
		return []File{{Name: filepath.Base(path), Data: data}}, nil
	}
	var files []File
	if err := readDir(root, "", map[string]bool{}, &files); err != nil {
		return nil, fmt.Errorf("rls: config %s: %w", path, err)
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return files, nil
}

// readDir appends the files under dir to files, named under rel: entries whose name starts
// with a dot skipped, links read through (to a regular file or a directory; others skipped, a
// FIFO would block the read). ancestors holds the real paths of the directories read so far:
// each is read once, under the first of its names in lexical order.
func readDir(dir, rel string, ancestors map[string]bool, files *[]File) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	if ancestors[real] {
		return nil // a directory read already: a link to one it is in, or a second name of one
	}
	ancestors[real] = true
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p, name := filepath.Join(dir, e.Name()), path.Join(rel, e.Name())
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		switch {
		case st.IsDir():
			if err := readDir(p, name, ancestors, files); err != nil {
				return err
			}
		case st.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			*files = append(*files, File{Name: name, Data: data})
		}
	}
	return nil
}

// LoadConfig reads the files at path (see [ReadFiles]) and parses them (see [ParseConfig]).
func LoadConfig(path string) (*Config, error) {
	files, err := ReadFiles(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(files...)
}

// Reloader puts a server's configuration files back in force when they change: each
// [Reloader.Reload] reads them, and when their contents differ from the last read, parses
// them and sets the result on the server. A configuration that does not parse is refused:
// the last good one stays in force, and the error is logged once for those contents.
//
// It polls, by design: a poll every second reads a few small files, and it sees every way a
// configuration changes the same way — a file written in place, a file renamed over another,
// a ConfigMap's "..data" link swapped, a RUNTIME_ROOT link moved — where file system events
// arrive on the links' directories, not on the files read through them, and are lost while a
// watched directory is replaced.
type Reloader struct {
	srv  *Server
	path string
	log  *slog.Logger

	mu      sync.Mutex
	seen    [sha256.Size]byte // the digest of the files last read
	loaded  bool              // seen is the digest of the configuration in force
	refused error             // why the files of seen were refused; nil when loaded
	readErr error             // why the files could not be read at the last poll, nil if they were
}

// NewReloader returns a reloader of the files at path for srv. The configuration in force is
// taken to be from those files when their digest is its Version (Config.Version); otherwise
// (they changed since it was read from them, or it was not) the first Reload reads them in.
func NewReloader(srv *Server, path string, log *slog.Logger) *Reloader {
	if log == nil {
		log = slog.Default()
	}
	r := &Reloader{srv: srv, path: path, log: log}
	if files, err := ReadFiles(path); err == nil {
		if sum := digest(files); srv.Config() != nil && versionOf(sum) == srv.Config().Version() {
			r.seen, r.loaded = sum, true
		}
	}
	return r
}

// digest is the SHA-256 of the files' names and contents.
func digest(files []File) [sha256.Size]byte {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%d:%s%d:", len(f.Name), f.Name, len(f.Data))
		h.Write(f.Data)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// Reload reads the files and puts them in force if they changed and parse. It reports whether
// it changed the configuration, and the error that kept it from doing so (a file that cannot
// be read, or the configuration's problems), also when those same contents were refused
// before.
func (r *Reloader) Reload() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	files, err := ReadFiles(r.path)
	if err != nil {
		// Mid-swap, a file can be gone for a moment: the next poll reads it again. An outage is
		// logged and counted once, when it begins (or its error changes).
		if r.readErr == nil || r.readErr.Error() != err.Error() {
			r.log.Error("rls: reloading the configuration: the last good one stays in force", "error", err)
			if r.srv.metrics != nil {
				r.srv.metrics.configLoaded(false)
			}
		}
		r.readErr = err
		return false, err
	}
	r.readErr = nil
	sum := digest(files)
	if sum == r.seen {
		return false, r.refused // nil when in force; the contents' refusal when refused before
	}
	r.seen = sum
	cfg, err := ParseConfig(files...)
	if err == nil {
		err = r.srv.SetConfig(cfg)
	}
	if err != nil {
		r.loaded, r.refused = false, err
		r.srv.setRefused(versionOf(sum), err)
		r.log.Error("rls: reloading the configuration: refused, the last good one stays in force", "error", err)
		if r.srv.metrics != nil {
			r.srv.metrics.configLoaded(false)
		}
		return false, err
	}
	r.loaded, r.refused = true, nil
	if len(cfg.Domains()) == 0 { // every limit gone: say so louder than a reload
		r.log.Warn("rls: configuration reloaded with no domain: every request is answered OK, with no limit", "files", len(files))
	} else {
		r.log.Info("rls: configuration reloaded", "files", len(files), "domains", len(cfg.Domains()))
	}
	return true, nil
}

// Err returns why the last reload kept the configuration in force from the files: they could
// not be read, or what they hold was refused; nil once they read and are in force.
func (r *Reloader) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.readErr != nil {
		return r.readErr
	}
	return r.refused
}

// Run reloads every interval until ctx ends.
func (r *Reloader) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = r.Reload()
		}
	}
}
