package rules

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a7d3e0dd/ratelimit"
)

// DefaultStartTimeout bounds how long OpenRedis waits for Redis before it starts on the last
// known good rules or the default ones, unless [WithStartTimeout] says otherwise.
const DefaultStartTimeout = 2 * time.Second

// WithLastKnownGood keeps the rules an Engine last applied from Redis in the file at path,
// written whole (a temporary file, synced to the disk, renamed over it; then the directory
// synced) each time it applies a version, so that a crash or a power loss leaves one version
// whole in it, and has [OpenRedis] start on that file when Redis is down or holds no rules.
// The file holds the document as pushed; give it the extension of the format you push (a
// YAML file reads JSON too).
func WithLastKnownGood(path string) Option {
	return engineOption(func(o *options) { o.once("WithLastKnownGood"); o.lastGood = path })
}

// WithDefaultRules gives [OpenRedis] the document to start on when Redis is down or holds no
// rules and no last known good rules can be read: name picks its format, as for [Parse]. Embed
// it in the binary (go:embed) to start anywhere.
func WithDefaultRules(name string, data []byte) StartOption {
	return startOption(func(o *options) { o.once("WithDefaultRules"); o.defaultName, o.defaultDoc = name, data })
}

// WithStartTimeout bounds how long [OpenRedis] waits for Redis before it starts on the last
// known good or default rules (default [DefaultStartTimeout]).
func WithStartTimeout(d time.Duration) StartOption {
	return startOption(func(o *options) { o.once("WithStartTimeout"); o.startTimeout = d })
}

// OpenRedis reads the rules stored in Redis at key ([Push], usually [DefaultRedisKey]) and
// returns an engine that applies them over store; see [NewEngine] and [Engine.WatchRedis].
//
// An application must start while Redis is down, as it keeps serving while Redis is down:
// when Redis does not answer within the start timeout ([WithStartTimeout], 2 s) or holds no
// rules, OpenRedis starts on the last known good rules ([WithLastKnownGood]) or else the
// default ones ([WithDefaultRules]), and logs which it used and why; [Engine.WatchRedis]
// applies the fleet's rules as soon as Redis answers. Without either, it returns the error.
func OpenRedis(ctx context.Context, store ratelimit.Store, client redis.UniversalClient, key string, opts ...StartOption) (*Engine, error) {
	o := collect(opts)
	if err := o.twiceErr(); err != nil {
		return nil, err
	}
	timeout := o.startTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	s, err := Fetch(fctx, client, key, asOptions(o))
	cancel()
	if err == nil {
		e, nerr := newEngine(store, s.Set, o, "redis "+key)
		if nerr == nil {
			e.keepLastGood(s.Document)
			return e, nil
		}
		// A document that parses but that this engine refuses (a tier without WithTier, say)
		// is one the fleet's running instances refuse too: they keep their rules, and a new
		// instance starts on its fallback rules, as when Redis holds none, or fails.
		err = fmt.Errorf("rules %s (version %s) cannot be applied here: %w", key, s.Set.Version(), nerr)
	}
	if ctx.Err() != nil {
		return nil, err
	}
	set, source, ferr := o.fallbackRules()
	if set == nil {
		if ferr != nil {
			err = fmt.Errorf("%w; and %w", err, ferr)
		}
		return nil, fmt.Errorf("%w; to start without the rules in Redis, give rules.WithLastKnownGood or rules.WithDefaultRules", err)
	}
	e, nerr := newEngine(store, set, o, source)
	if nerr != nil {
		return nil, nerr
	}
	why := "the rules stored in Redis cannot be applied here"
	switch {
	case errors.Is(err, ErrNoRules):
		why = "Redis holds no rules"
	case unreachable(fctx, err):
		why = "Redis does not answer"
	}
	e.opts.logger.Warn("ratelimit rules: starting without the fleet's rules: "+why+"; WatchRedis applies them as soon as Redis answers",
		"source", source, "version", set.Version(), "key", key, "error", err)
	return e, nil
}

// fallbackRules returns the rules to start on without Redis, and where they come from: the
// last known good file, else the default document; an error says why the file could not be
// used.
func (o options) fallbackRules() (*Set, string, error) {
	var ferr error
	if o.lastGood != "" {
		data, err := readFile(o.lastGood)
		if err == nil {
			var set *Set
			if set, err = Parse(filepath.Base(o.lastGood), data, asOptions(o)); err == nil {
				return set, "last known good " + o.lastGood, nil
			}
		}
		ferr = fmt.Errorf("the last known good rules %s cannot be used: %w", o.lastGood, err)
	}
	if o.defaultDoc != nil {
		set, err := Parse(o.defaultName, o.defaultDoc, asOptions(o))
		if err != nil {
			return nil, "", fmt.Errorf("the default rules %s: %w", o.defaultName, err)
		}
		if ferr != nil {
			return set, "default " + o.defaultName + " (" + ferr.Error() + ")", nil
		}
		return set, "default " + o.defaultName, nil
	}
	return nil, "", ferr
}

// keepLastGood writes doc, the document of the rules just applied from Redis, to the last
// known good file, if there is one: whole, by renaming a temporary file over it, the
// temporary file synced before the rename and the directory after it, so that after a crash
// or a power loss the file holds one version whole. A failure is logged: the rules in use do
// not depend on it.
func (e *Engine) keepLastGood(doc []byte) {
	path := e.opts.lastGood
	if path == "" {
		return
	}
	err := func() error {
		f, err := os.CreateTemp(filepath.Dir(path), ".ratelimit-rules-*")
		if err != nil {
			return err
		}
		defer os.Remove(f.Name()) // gone once renamed
		if _, err := f.Write(doc); err != nil {
			f.Close()
			return err
		}
		if err := syncFile(f); err != nil { // on the disk before the name points at it
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := os.Rename(f.Name(), path); err != nil {
			return err
		}
		return syncDir(filepath.Dir(path))
	}()
	if err != nil {
		e.opts.logger.Warn("ratelimit rules: cannot keep the last known good rules", "path", path, "error", err)
	}
}

// syncFile flushes f to the disk: (*os.File).Sync, a variable for the tests.
var syncFile = (*os.File).Sync

// syncDir flushes the directory dir, so that a rename in it lasts. Windows cannot sync a
// directory (its file system journals the rename): there it does nothing. A file system that
// cannot either (EINVAL) is not reported: the file is renamed all the same.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err == nil {
		err = syncFile(d)
		d.Close()
	}
	if err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("the file is renamed, but syncing its directory failed: %w", err)
	}
	return nil
}
