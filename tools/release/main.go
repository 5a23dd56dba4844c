// Command release prepares, tags and checks a release of every module of this repository.
//
//	go run ./tools/release [-tag] [-check] VERSION
//
// The modules are the core and every module beneath it that is released (the adapters, the
// metrics modules, rules, the command; not the examples nor internal/), ordered so that each
// comes after the modules it requires. For VERSION (vMAJOR.MINOR.PATCH) it:
//
//  1. sets every requirement of one of these modules on another to VERSION (go.mod), and the
//     workspaces' replace lines with it (go.work);
//  2. sets the README's install lines (go get …@v, go install …@v) to VERSION, and checks that
//     CHANGELOG.md has a section for it;
//  3. with -tag: commits that as "release VERSION" and tags each module in order: VERSION for
//     the core, <dir>/VERSION for the others (local tags: push them with git push origin
//     --tags);
//  4. with -check: the install check. It builds a module proxy of files from the tree being
//     released, then, in a fresh module outside the workspace (GOWORK=off, GOFLAGS=-mod=mod,
//     GOPROXY=file://<proxy> first — our modules are never fetched from anywhere else — then
//     the environment's GOPROXY for the others, or nothing but the module cache with
//     -offline), runs every install line of the README, builds a program that imports every
//     module's package, and installs the command.
//
// Without -tag nothing of the repository changes: the check runs on a copy.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

func main() {
	tag := flag.Bool("tag", false, "commit the release and tag every module")
	check := flag.Bool("check", false, "check that every install line of the README resolves")
	flag.BoolVar(&offline, "offline", false, "with -check: take the modules that are not ours from the module cache only, not from GOPROXY")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./tools/release [-tag] [-check] VERSION")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || !semver.MatchString(flag.Arg(0)) {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *tag, *check); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

func run(version string, tag, check bool) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	dir := root
	if !tag {
		if dir, err = copyTree(root); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	mods, err := modules(dir)
	if err != nil {
		return err
	}
	if err := prepare(dir, mods, version); err != nil {
		return err
	}
	for _, m := range mods {
		fmt.Printf("%-48s %s\n", m.path, m.tag(version))
	}
	if tag {
		if err := commitAndTag(dir, mods, version); err != nil {
			return err
		}
	}
	if check {
		if err := installCheck(dir, mods, version); err != nil {
			return err
		}
		fmt.Println("install check: every install line of the README resolves, builds and installs")
	}
	return nil
}

// repoRoot is the directory of the core module: the nearest parent of the working directory
// with a go.mod of module github.com/a7d3e0dd/ratelimit.
func repoRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && modulePath(b) == core {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("not inside the repository of %s", core)
		}
		d = parent
	}
}
