package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// core is the path of the core module; every released module's path starts with it.
const core = "github.com/a7d3e0dd/ratelimit"

// module is one released module of the repository.
type module struct {
	dir   string   // relative to the root: "." for the core
	path  string   // its module path
	needs []string // the paths of the released modules it requires
}

// tag returns the module's tag of version: version for the core, <dir>/version for the others.
func (m module) tag(version string) string {
	if m.dir == "." {
		return version
	}
	return m.dir + "/" + version
}

var (
	moduleLine  = regexp.MustCompile(`(?m)^module\s+(\S+)`)
	requireLine = regexp.MustCompile(`(?m)^\s*(?:require\s+)?(` + regexp.QuoteMeta(core) + `(?:/\S+)?)\s+(v\S+)`)
)

func modulePath(gomod []byte) string {
	if m := moduleLine.FindSubmatch(gomod); m != nil {
		return string(m[1])
	}
	return ""
}

// modules returns the released modules under root, each after those it requires. The
// examples, everything under internal/ and the developer tools (tools/) are not released.
func modules(root string) ([]module, error) {
	var mods []module
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || rel == "examples" || rel == "internal" || rel == "tools") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		m := module{dir: filepath.ToSlash(filepath.Dir(rel)), path: modulePath(b)}
		want := core
		if m.dir != "." {
			want += "/" + m.dir
		}
		if m.path != want {
			return fmt.Errorf("%s: module %s; want %s", rel, m.path, want)
		}
		for _, r := range requireLine.FindAllSubmatch(b, -1) {
			m.needs = append(m.needs, string(r[1]))
		}
		mods = append(mods, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ordered(mods)
}

// ordered sorts mods so that each comes after the modules it requires (by path otherwise).
func ordered(mods []module) ([]module, error) {
	slices.SortFunc(mods, func(a, b module) int { return strings.Compare(a.path, b.path) })
	byPath := map[string]module{}
	for _, m := range mods {
		byPath[m.path] = m
	}
	var out []module
	done, visiting := map[string]bool{}, map[string]bool{}
	var visit func(m module) error
	visit = func(m module) error {
		if done[m.path] {
			return nil
		}
		if visiting[m.path] {
			return fmt.Errorf("modules require each other in a cycle through %s", m.path)
		}
		visiting[m.path] = true
		for _, n := range m.needs {
			dep, ok := byPath[n]
			if !ok {
				return fmt.Errorf("%s requires %s, which is not a released module of the repository", m.path, n)
			}
			if err := visit(dep); err != nil {
				return err
			}
		}
		done[m.path] = true
		out = append(out, m)
		return nil
	}
	for _, m := range mods {
		if err := visit(m); err != nil {
			return nil, err
		}
	}
	return out, nil
}
