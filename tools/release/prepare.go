package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

var (
	// workReplace is a workspace's replace of one of the modules at a version.
	workReplace = regexp.MustCompile(`(?m)^(\s*(?:replace\s+)?` + regexp.QuoteMeta(core) + `(?:/\S+)?\s+)v\S+(\s+=>)`)
	// installLine is an install line of the README naming a version.
	installLine = regexp.MustCompile(`(go (?:get|install) ` + regexp.QuoteMeta(core) + `(?:/[^\s@]+)?)@v[0-9]+\.[0-9]+\.[0-9]+`)
)

// prepare sets every requirement between the modules, the workspaces' replace lines and the
// README's install lines to version, and checks that the changelog names it.
func prepare(root string, mods []module, version string) error {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		switch d.Name() {
		case "go.mod", "go.newest.mod": // an adapter's newest-release module file requires the core too
			return rewrite(p, func(s string) string {
				return requireLine.ReplaceAllStringFunc(s, func(line string) string {
					m := requireLine.FindStringSubmatch(line)
					return strings.Replace(line, m[2], version, 1)
				})
			})
		case "go.work":
			return rewrite(p, func(s string) string { return workReplace.ReplaceAllString(s, "${1}"+version+"${2}") })
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := rewrite(filepath.Join(root, "README.md"), func(s string) string {
		return installLine.ReplaceAllString(s, "${1}@"+version)
	}); err != nil {
		return err
	}
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return err
	}
	if !regexp.MustCompile(`(?m)^## .*` + regexp.QuoteMeta(version) + `\b`).Match(changelog) {
		return fmt.Errorf("CHANGELOG.md has no section for %s (a heading naming it, such as \"## [%s] — 2026-12-01\")", version, version)
	}
	return nil
}

// rewrite replaces the file at p with edit of its contents, when that changes them.
func rewrite(p string, edit func(string) string) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if s := edit(string(b)); s != string(b) {
		return os.WriteFile(p, []byte(s), 0o644)
	}
	return nil
}

// commitAndTag commits the prepared release and tags each module, in order.
func commitAndTag(root string, mods []module, version string) error {
	for _, m := range mods {
		if out, err := git(root, "tag", "-l", m.tag(version)); err != nil || out != "" {
			return fmt.Errorf("tag %s exists already (or git failed: %v)", m.tag(version), err)
		}
	}
	if _, err := git(root, "add", "-A"); err != nil {
		return err
	}
	if _, err := git(root, "commit", "-q", "--allow-empty", "-m", "release "+version); err != nil {
		return err
	}
	for _, m := range mods {
		if _, err := git(root, "tag", "-a", m.tag(version), "-m", m.path+" "+version); err != nil {
			return err
		}
	}
	fmt.Printf("committed \"release %s\" and tagged %d modules; push with: git push origin HEAD --tags\n", version, len(mods))
	return nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// copyTree copies the files git tracks under root, as they are in the working tree, into a
// new temporary directory.
func copyTree(root string) (string, error) {
	out, err := git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "ratelimit-release-")
	if err != nil {
		return "", err
	}
	for _, f := range strings.Split(out, "\x00") {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the working tree
			}
			return "", err
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return "", err
		}
	}
	if _, err := git(dir, "init", "-q"); err != nil { // so that ls-files lists the copy's files
		return "", err
	}
	if _, err := git(dir, "add", "-A"); err != nil {
		return "", err
	}
	return dir, nil
}
