package main

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// offline makes the check take the modules that are not ours from the module cache only.
var offline bool

// installCheck proves that every install line of the README resolves from the modules as
// released: a proxy of files holds them, and a fresh module outside the workspace gets,
// builds and installs them with nothing else but the module cache.
func installCheck(root string, mods []module, version string) error {
	work, err := os.MkdirTemp("", "ratelimit-install-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	proxy := filepath.Join(work, "proxy")
	files, err := git(root, "ls-files")
	if err != nil {
		return err
	}
	tracked := strings.Split(files, "\n")
	for _, m := range mods {
		if err := publish(proxy, root, m, mods, tracked, version); err != nil {
			return fmt.Errorf("%s: %w", m.path, err)
		}
	}
	probe := filepath.Join(work, "probe")
	if err := os.MkdirAll(probe, 0o755); err != nil {
		return err
	}
	others := "off"
	if !offline {
		out, err := exec.Command("go", "env", "GOPROXY").Output()
		if err != nil {
			return err
		}
		others = strings.TrimSpace(string(out))
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
		"GOPROXY=file://"+filepath.ToSlash(proxy)+","+others, "GONOSUMDB="+core, "GOBIN="+filepath.Join(work, "bin"))
	run := func(args ...string) error {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = probe, env
		out, err := cmd.CombinedOutput()
		fmt.Printf("  %s\n", strings.Join(args, " "))
		if err != nil {
			return fmt.Errorf("%s: %v\n%s(a module that is not ours missing from the module cache? run the repository's tests first, which download every one)", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("go", "mod", "init", "probe"); err != nil {
		return err
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return err
	}
	lines := regexp.MustCompile(`(?m)^go (?:get|install) `+regexp.QuoteMeta(core)+`\S*`).FindAllString(string(readme), -1)
	if len(lines) == 0 {
		return fmt.Errorf("the README has no install line")
	}
	got := map[string]bool{}
	for _, line := range lines {
		if err := run(strings.Fields(line)...); err != nil {
			return err
		}
		path, _, _ := strings.Cut(strings.Fields(line)[2], "@")
		got[path] = true
	}
	// A program that imports the package at the root of every module the README installs.
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for _, m := range mods {
		if got[m.path] && hasLibrary(filepath.Join(root, m.dir)) {
			fmt.Fprintf(&src, "\t_ %q\n", m.path)
		}
	}
	src.WriteString(")\n\nfunc main() {}\n")
	if err := os.WriteFile(filepath.Join(probe, "main.go"), []byte(src.String()), 0o644); err != nil {
		return err
	}
	if err := run("go", "build", "-o", os.DevNull, "."); err != nil {
		return err
	}
	for _, m := range mods {
		if !got[m.path] {
			fmt.Printf("  (no install line names %s)\n", m.path)
		}
	}
	return nil
}

// hasLibrary reports whether dir holds a package other than main.
func hasLibrary(dir string) bool {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil && !regexp.MustCompile(`(?m)^package main\b`).Match(b) {
			return true
		}
	}
	return false
}

// publish writes module m at version into the file proxy: its list, info, go.mod and zip of
// the tracked files of its directory, less those of the modules nested in it.
func publish(proxy, root string, m module, mods []module, tracked []string, version string) error {
	dir := filepath.Join(proxy, filepath.FromSlash(m.path), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	info, _ := json.Marshal(map[string]string{"Version": version, "Time": time.Now().UTC().Format(time.RFC3339)})
	gomod, err := os.ReadFile(filepath.Join(root, m.dir, "go.mod"))
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": gomod} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	f, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		return err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	prefix := ""
	if m.dir != "." {
		prefix = m.dir + "/"
	}
	for _, file := range tracked {
		rel, ok := strings.CutPrefix(file, prefix)
		if !ok || file == "" || nested(file, m, root) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return err
		}
		w, err := zw.Create(m.path + "@" + version + "/" + rel)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return zw.Close()
}

// nested reports whether file belongs to a module nested in m's directory: a directory
// between them holds a go.mod.
func nested(file string, m module, root string) bool {
	for d := filepath.Dir(file); d != "." && d != m.dir; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(root, d, "go.mod")); err == nil {
			return true
		}
	}
	return false
}
