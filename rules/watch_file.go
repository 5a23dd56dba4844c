package rules

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/a7d3e0dd/ratelimit"
	"github.com/fsnotify/fsnotify"
)

// Intervals of the watchers.
const (
	defaultFilePoll = 5 * time.Second        // a file is read this often without notification
	settle          = 100 * time.Millisecond // after a notification, for the writer to finish
)

// WithPollInterval sets how often a watcher reads its source when nothing told it of a change,
// in case a notification was lost or the system gives none: default 5 s for a file
// ([Engine.WatchFile]), 30 s for Redis ([Engine.WatchRedis]).
func WithPollInterval(d time.Duration) Option {
	return engineOption(func(o *options) { o.once("WithPollInterval"); o.poll = d })
}

// Open reads the rules file at path and returns an engine that applies it over store; see
// [NewEngine] and [Engine.WatchFile].
func Open(store ratelimit.Store, path string, opts ...Option) (*Engine, error) {
	o := collect(opts)
	if err := o.twiceErr(); err != nil {
		return nil, err
	}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	set, err := Parse(path, data, asOptions(o))
	if err != nil {
		return nil, err
	}
	return newEngine(store, set, o, path)
}

// readFile reads a rules file, refusing one larger than MaxFileSize before reading it all.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > MaxFileSize {
		return nil, Errors{{File: path, Msg: fmt.Sprintf("the file is %d bytes; a rules file may be at most %d (1 MiB)", fi.Size(), MaxFileSize)}}
	}
	return os.ReadFile(path)
}

// WatchFile keeps the rules in use those of the file at path, until ctx ends; then it returns
// nil. Run it in a goroutine of its own:
//
//	go e.WatchFile(ctx, "limits.yaml")
//
// The operating system tells it of changes (fsnotify, watching the file's directory, so that
// a file replaced by rename — as editors and Kubernetes ConfigMaps do — is seen), and it reads
// the file every poll interval as well ([WithPollInterval]), in case a notification is lost or
// the system gives none. A change is applied when the file has settled for 100 ms. A file that
// cannot be read or does not parse is logged and reported with its errors, each with its
// line, and the last good rules stay in use; it is reported once, not at every poll. A file
// whose rules are an empty list is such a file unless it says allow_empty: true; one that
// says so is applied, and logged at warning level: no request is limited. A file needs no
// version (see [Set.Versioned]): a change of its rules is a change of its hash.
func (e *Engine) WatchFile(ctx context.Context, path string) error {
	w := &fileWatch{e: e, path: path}
	poll := e.opts.poll
	if poll <= 0 {
		poll = defaultFilePoll
	}
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	var changed <-chan struct{}
	if !e.opts.noNotify {
		var err error
		if changed, err = notifications(ctx, path); err != nil {
			e.opts.logger.Warn("ratelimit rules: cannot watch the file; reading it every poll interval", "path", path, "poll", poll, "error", err)
		}
	}
	w.load()
	if e.opts.started != nil {
		e.opts.started()
	}
	var settled <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			w.load()
		case <-changed:
			if settled == nil {
				settled = time.After(settle)
			}
		case <-settled:
			settled = nil
			w.load()
		}
	}
}

// fileWatch is the state of one WatchFile.
type fileWatch struct {
	e    *Engine
	path string
	last [sha256.Size]byte // of the contents last read
	seen bool
	err  string // the last read error reported
}

// load reads the file and applies it if it changed.
func (w *fileWatch) load() {
	data, err := readFile(w.path)
	if err != nil {
		if msg := err.Error(); msg != w.err {
			w.err = msg
			_ = w.e.rejected(w.path, err)
		}
		return
	}
	w.err = ""
	sum := sha256.Sum256(data)
	if w.seen && sum == w.last {
		return
	}
	w.last, w.seen = sum, true
	set, err := parse(w.path, data, w.e.opts)
	if err != nil {
		_ = w.e.rejected(w.path, err)
		return
	}
	_ = w.e.applyChanged(set, w.path)
}

// notifications returns a channel that receives a value when the file at path may have
// changed, until ctx ends.
func notifications(ctx context.Context, path string) (<-chan struct{}, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err == nil {
		err = fw.Add(filepath.Dir(abs))
	}
	if err != nil {
		fw.Close()
		return nil, err
	}
	out := make(chan struct{}, 1)
	go func() {
		defer fw.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				// Kubernetes swaps a ConfigMap's files by renaming its ..data link.
				if ev.Name == abs || filepath.Base(ev.Name) == "..data" {
					select {
					case out <- struct{}{}:
					default:
					}
				}
			case _, ok := <-fw.Errors:
				if !ok {
					return
				}
				// An overflow: something may have changed.
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, nil
}
